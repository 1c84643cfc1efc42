"""`genenv`: run the GenEnv co-evolution loop, re-run and compare generations, and query the warehouse."""

from __future__ import annotations

import argparse
import signal
import sys
import traceback

from genenv.cli.commands import COMMANDS
from genenv.cli.commands.stopping import Stopped
from genenv.config import ConfigError
from genenv.errors import RerunError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="genenv", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show the traceback of a refusal or a failed run")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def stop_like_ctrl_c(signum: int, frame: object) -> None:
    """SIGTERM (a container runtime, a batch scheduler, `kill`) unwinds like Ctrl-C: flow runs are marked crashed
    and the temporary Prefect server and other children are stopped, instead of being left as orphans."""
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, stop_like_ctrl_c)
    from genenv.warehouse.store import WarehouseError

    try:
        return args.handler(args)
    except (ConfigError, WarehouseError, RerunError) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"genenv: {exc}", file=sys.stderr)
        return 2
    except Stopped as stopped:  # its line is printed
        return stopped.exit_code
    except KeyboardInterrupt:
        if args.debug:
            traceback.print_exc()
        print("genenv: stopped", file=sys.stderr)
        return 130
