"""genenv config: every config field with its type, default and meaning."""

from __future__ import annotations

import argparse

from genenv.config import field_help


def add_parser(commands: argparse._SubParsersAction) -> None:
    commands.add_parser("config", help="list every config field").set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    for name, kind, default, help_text in field_help():
        print(f"{name} ({kind}, default {default!r})\n    {help_text}")
    return 0
