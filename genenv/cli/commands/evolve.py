"""genenv evolve: run (or resume) a co-evolution run."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from genenv.cli.commands.environment import invoked_as, prepare_command
from genenv.cli.commands.run_report import committed_generations, what_changed, write_report
from genenv.cli.commands.stopping import stop_on_signals
from genenv.config import ConfigError, parse_overrides
from genenv.pipeline.run_config import config_to_run
from genenv.validation import validate


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("evolve", help="run (or resume) a co-evolution run")
    parser.add_argument("--config", help="YAML file of config fields (see `genenv config`)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one field")
    parser.add_argument("--run-id", help="resume this run instead of starting a new one")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.run_id is not None and not args.run_id.strip():  # a script whose run lookup came back empty
        raise ConfigError("--run-id: empty; give the run to resume, or leave it out to start a new run")
    config = validate(config_to_run(args.config, parse_overrides(args.set), args.run_id))  # the config that runs
    prepare_command(config.data_dir, args.debug)
    from genenv.flows.evolve import evolve
    from genenv.models.loading import check_base_model, prefetch_base_model
    from genenv.pipeline.run_records import new_run_id

    run_id = args.run_id or new_run_id(config.run_name)
    named = evolve.with_options(flow_run_name=run_id)  # the flow run is the genenv run, from its first log line
    with stop_on_signals(stopped_line(args, run_id), args.debug):
        check_base_model(config.model, config.models_dir)  # before Prefect starts; the flow checks for a deployment
        prefetch_base_model(config.model, config.models_dir)  # its conversion overlaps Prefect's start
        named(config.to_dict(), run_id=run_id)
    warehouse = config.resolved_warehouse_uri
    example = "SELECT generation, avg(reward) FROM trajectories GROUP BY 1 ORDER BY 1"
    print(f"\nRun {run_id} finished. Its data is in {warehouse}")
    print("Try, for example:")
    print(f'  {invoked_as()} sql --warehouse {warehouse} "{example}"')
    generations = committed_generations(warehouse, run_id)
    report = write_report(Path(config.data_dir) / "reports" / f"{run_id}-dynamics.md", run_id, generations)
    print("\n".join(["", *what_changed(generations, report)]))
    return 0


def stopped_line(args: argparse.Namespace, run_id: str) -> str:
    """The one line a stopped run prints: the run, and the command that resumes it (this one, with its run id)."""
    given = [*(["--config", args.config] if args.config else []), *(x for s in args.set for x in ("--set", s))]
    resume = shlex.join([invoked_as(), "evolve", *given, "--run-id", run_id])
    return f"run {run_id} resumes where it stopped with: {resume}"
