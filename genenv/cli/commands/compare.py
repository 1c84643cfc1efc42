"""genenv compare: run several arms from one generation 0 at equal budgets, score them, write an HTML report."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from genenv.arms import ARMS, BASE, plan_arms
from genenv.config import ConfigError, parse_overrides


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("compare", help="compare arms (genenv, genenv-random, static, ...) with a report")
    parser.add_argument("--arms", default="genenv,genenv-random", help=f"comma-separated, from {sorted(ARMS)}")
    parser.add_argument("--config", help="YAML config shared by every arm")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one field")
    parser.add_argument("--benchmarks", help="comma-separated benchmark names (default: all)")
    parser.add_argument(
        "--benchmarks-dir",
        default=os.environ.get("GENENV_BENCHMARKS_DIR"),
        help="folder holding API-Bank and Bamboogle (BFCL comes from the bfcl-eval package); without it they are "
        "skipped, saying what to supply",
    )
    parser.add_argument(
        "--items",
        metavar="CATEGORY=N,...",
        help="benchmark items per category, e.g. simple_python=200,multiple=100,irrelevance=100,parallel=0 "
        "(0 leaves a category out; others get --limit); the same seeded sample for every model",
    )
    parser.add_argument("--limit", type=int, help="benchmark items per category not named by --items (default: all)")
    parser.add_argument(
        "--every-generation",
        action="store_true",
        help="score every generation of each arm (default: generation 0 and each arm's last generation)",
    )
    parser.add_argument(
        "--seeds",
        metavar="S,...",
        help="run each training arm once per seed, all from one generation 0; differences pooled over the seeds "
        "(default: the config's seed)",
    )
    parser.add_argument(
        "--from-run",
        metavar="RUN_ID",
        help="share this run's generation 0 instead of making one; with the same arguments again, a comparison "
        "continues where it stopped",
    )
    parser.add_argument("--report", default="data/reports/compare.html")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    overrides = parse_overrides(args.set)
    items = parse_items(args.items)
    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit: must be >= 1 (got {args.limit})")
    if args.benchmarks_dir is not None and not Path(args.benchmarks_dir).is_dir():
        raise ConfigError(f"--benchmarks-dir: folder does not exist (got {args.benchmarks_dir!r})")
    benchmarks = [name.strip() for name in args.benchmarks.split(",") if name.strip()] if args.benchmarks else None
    seeds = parse_seeds(args.seeds)
    plans = plan_arms(arms, args.config, overrides, seeds)
    check_benchmarks(benchmarks)
    from genenv.evaluation.benchmark_registry import DEFAULT_BENCHMARKS, check_item_sizes, present_benchmarks

    present, skipped = present_benchmarks(benchmarks or DEFAULT_BENCHMARKS, args.benchmarks_dir)
    for line in skipped:
        print(f"genenv compare: {line}", file=sys.stderr)
    if not present:
        raise ConfigError("--benchmarks: no benchmark data present (see the lines above)")
    try:
        check_item_sizes(present, args.benchmarks_dir, items)
    except (ValueError, FileNotFoundError) as exc:
        raise ConfigError(f"--items: {exc}") from None
    from genenv.validation import for_this_machine, validate_plans

    if args.from_run:
        from genenv.flows.compare import check_shared_run
        from genenv.warehouse.store import Warehouse

        sharing = [replace(plan, config=for_this_machine(plan.config)) for plan in plans if plan.role != BASE]
        check_shared_run(Warehouse(plans[0].config.resolved_warehouse_uri), args.from_run, sharing)
    from genenv.cli.commands.environment import prepare_command

    validate_plans(plans)  # last of the checks: it makes the data folder, as the run would
    prepare_command(plans[0].config.data_dir, args.debug)
    from genenv.cli.commands.stopping import stop_on_signals
    from genenv.flows.compare import compare

    with stop_on_signals(CONTINUES, args.debug):
        report = compare(
            arms,
            args.config,
            overrides,
            benchmarks,
            args.benchmarks_dir,
            args.limit,
            args.report,
            items=items,
            every_generation=args.every_generation,
            seeds=seeds,
            from_run=args.from_run,
        )
    print(f"\nReport: {report}")
    return 0


CONTINUES = (
    "the comparison continues where it stopped when this command runs again with --from-run naming its generation-0 "
    "run (`genenv runs` lists it)"
)
"""The line a stopped comparison ends with (flows/compare.py: an arm whose run exists goes on, a scored model is not
scored again)."""


def parse_seeds(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(f"--seeds: expected comma-separated integers (got {text!r})") from None


def parse_items(text: str | None) -> dict[str, int] | None:
    from genenv.evaluation.benchmark_registry import parse_item_sizes

    try:
        return parse_item_sizes(text) or None
    except (ValueError, FileNotFoundError) as exc:
        raise ConfigError(f"--items: {exc}") from None


def check_benchmarks(names: list[str] | None) -> None:
    from genenv.evaluation.benchmark_registry import BENCHMARKS

    unknown = [name for name in names or [] if name not in BENCHMARKS]
    if names is not None and (not names or unknown):
        raise ConfigError(f"--benchmarks: unknown {unknown or 'empty list'}; known: {BENCHMARKS.names()}")
