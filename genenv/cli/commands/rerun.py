"""genenv rerun: re-run generation G of a run from the snapshot of G-1, as a new run (a fork)."""

from __future__ import annotations

import argparse

from genenv.cli.commands.sql import DEFAULT_WAREHOUSE
from genenv.config import parse_overrides


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("rerun", help="re-run one generation from its snapshot as a new run")
    parser.add_argument("--run", required=True, help="the parent run")
    parser.add_argument("--generation", type=int, required=True, help="the generation to re-run (>= 1)")
    parser.add_argument("--fork", help="name of the new run (default: <run name>-rerun-g<G>)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change one config field")
    parser.add_argument("--warehouse", default=DEFAULT_WAREHOUSE)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from genenv.tasks.fork import plan_fork
    from genenv.warehouse.store import Warehouse

    overrides = parse_overrides(args.set)
    from genenv.validation import validate

    config = validate(plan_fork(Warehouse(args.warehouse), args.run, args.generation, overrides))
    from genenv.cli.commands.environment import invoked_as, prepare_command
    from genenv.cli.commands.stopping import stop_on_signals

    prepare_command(config.data_dir, args.debug)
    from genenv.flows.rerun import rerun_generation

    with stop_on_signals(stopped_line(args, config.data_dir), args.debug):
        fork_id = rerun_generation(args.warehouse, args.run, args.generation, args.fork, overrides)
    print(f"\nRe-ran generation {args.generation} of {args.run} as run {fork_id}.")
    print(f'  {invoked_as()} sql --warehouse {args.warehouse} --run {fork_id} "SELECT * FROM generations"')
    return 0


def stopped_line(args: argparse.Namespace, data_dir: str) -> str:
    """What a stopped re-run leaves: its fork, once registered, finishes as any run resumes."""
    from genenv.cli.commands.environment import invoked_as

    prog = invoked_as()
    return (
        f"generation {args.generation} of {args.run} was being re-run; if `{prog} runs --warehouse {args.warehouse}` "
        f"lists its fork, `{prog} evolve --run-id FORK --set data_dir={data_dir} --set generations={args.generation}` "
        "finishes it, else run this command again"
    )
