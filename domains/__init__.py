"""Task families. Importing this package registers the built-in domains."""

from genenv.domains import text_game, tool_call  # noqa: F401
