"""`genenv` subcommands, one module each. A new command is one module with `add_parser` plus one line here."""

from genenv.cli.commands import (
    check_domain,
    compare,
    config_fields,
    evolve,
    install_model,
    plan,
    rerun,
    runs,
    sql,
    stack,
)
from genenv.cli.commands import eval as eval_command

COMMANDS = (evolve, rerun, runs, sql, config_fields, stack, eval_command, compare, plan, check_domain, install_model)
