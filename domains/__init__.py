"""Task families. Each domain, the built-ins included, registers through an entry point in the group
genenv.domains (pyproject.toml), which genenv.domains.base.DOMAINS reads: importing this package registers nothing."""
