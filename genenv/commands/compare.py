"""genenv compare: run several arms at equal budgets, evaluate every generation, write an HTML report."""

from __future__ import annotations

import argparse

from genenv.arms import ARMS, arm_overrides
from genenv.config import load_config, parse_overrides
from genenv.environment import prepare_environment


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("compare", help="compare arms (genenv, genenv-random, static, ...) with a report")
    parser.add_argument("--arms", default="genenv,genenv-random", help=f"comma-separated, from {sorted(ARMS)}")
    parser.add_argument("--config", help="YAML config shared by every arm")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one field")
    parser.add_argument("--benchmarks", help="comma-separated benchmark names (default: all)")
    parser.add_argument("--benchmarks-dir", default="../shared/benchmarks")
    parser.add_argument("--limit", type=int, help="benchmark items per category")
    parser.add_argument("--report", default="data/reports/compare.html")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    overrides = parse_overrides(args.set)
    configs = [load_config(args.config, {**overrides, **arm_overrides(arm)}) for arm in arms]
    prepare_environment(configs[0].data_dir)
    from flows.compare import compare

    benchmarks = args.benchmarks.split(",") if args.benchmarks else None
    report = compare(arms, args.config, overrides, benchmarks, args.benchmarks_dir, args.limit, args.report)
    print(f"\nReport: {report}")
    return 0
