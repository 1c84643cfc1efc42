"""`genenv` subcommands, one module each. A new command is one module with `add_parser` plus one line here."""

from genenv.commands import config, evolve, sql

COMMANDS = (evolve, sql, config)
