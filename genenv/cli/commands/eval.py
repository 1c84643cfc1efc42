"""genenv eval: score the base model, or a run's agent at a generation, on benchmark data; print the scores."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from genenv.config import ConfigError, field_help

CLUSTER_FIELDS = ("ray_address", "rollout_workers", "worker_cpus", "worker_gpus")
"""Config fields that place the scoring on a Ray cluster; each is an option of this command."""


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("eval", help="score a model on BFCL, API-Bank and Bamboogle (or other benchmarks)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--model", default="embedded:smollm2-135m-instruct", help="base model spec (no run)")
    which.add_argument("--run", help="score this run's agent")
    parser.add_argument("--generation", type=int, help="the run's generation (default: its last committed one)")
    parser.add_argument("--benchmarks", default="bfcl,api_bank,bamboogle", help="comma-separated benchmark names")
    parser.add_argument("--limit", type=int, help="N items per category (default: all); a fixed, seeded sample")
    parser.add_argument(
        "--items",
        metavar="CATEGORY=N,...",
        help="items per category, e.g. simple_python=200,multiple=100,parallel=0 (0 leaves it out; others: --limit)",
    )
    parser.add_argument(
        "--data",
        default=os.environ.get("GENENV_BENCHMARKS_DIR"),
        help="folder holding API-Bank and Bamboogle (BFCL comes from the bfcl-eval package); without it they are "
        "skipped, saying what to supply",
    )
    parser.add_argument("--warehouse", default=os.environ.get("GENENV_WAREHOUSE", str(Path("data") / "warehouse")))
    parser.add_argument("--cache-dir", default="data", help="project data folder (model cache, Prefect home)")
    parser.add_argument("--precision", choices=("float32", "bfloat16"), help="default: the run's, else float32")
    parser.add_argument("--batch-size", type=int, default=16, help="conversations per forward pass")
    parser.add_argument(
        "--vllm-gpu-memory-utilization",
        type=float,
        default=0.9,
        help="backend vllm on a GPU: the engine's share of the GPU (default 0.9: nothing trains beside it)",
    )
    cluster = parser.add_argument_group("scoring on a Ray cluster (docs/scale.md): the config fields of these names")
    for name, _, default, help_text in field_help():
        if name in CLUSTER_FIELDS:
            cluster.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default, help=help_text)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from genenv.evaluation.benchmark_registry import BENCHMARKS

    names = [name.strip() for name in args.benchmarks.split(",") if name.strip()]
    unknown = [name for name in names if name not in BENCHMARKS]
    if not names or unknown:
        raise ConfigError(f"--benchmarks: unknown {unknown or 'empty list'}; known: {BENCHMARKS.names()}")
    if args.generation is not None and args.run is None:
        raise ConfigError("--generation: needs --run")
    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit: must be >= 1 (got {args.limit})")
    if not 0.0 < args.vllm_gpu_memory_utilization <= 1.0:
        raise ConfigError(f"--vllm-gpu-memory-utilization: must be in (0, 1] (got {args.vllm_gpu_memory_utilization})")
    if args.data is not None and not Path(args.data).is_dir():
        raise ConfigError(f"--data: folder does not exist (got {args.data!r})")
    from genenv.evaluation.benchmark_registry import check_item_sizes, parse_item_sizes, present_benchmarks

    names, skipped = present_benchmarks(names, args.data)
    for line in skipped:
        print(f"genenv eval: {line}", file=sys.stderr)
    if not names:
        raise ConfigError("--benchmarks: no benchmark data present (see the lines above)")
    try:
        items = parse_item_sizes(args.items) or None
        check_item_sizes(names, args.data, items)
    except (ValueError, FileNotFoundError) as exc:
        raise ConfigError(f"--items: {exc}") from None
    from genenv.cli.commands.environment import prepare_command

    prepare_command(args.cache_dir, args.debug)
    from genenv.cli.commands.stopping import stop_on_signals
    from genenv.flows.evaluate import evaluate

    with stop_on_signals("nothing of it is reported; run this command again", args.debug):
        eval_batch = evaluate(
            model=args.model,
            run_id=args.run,
            generation=args.generation,
            benchmarks=names,
            data_dir=str(Path(args.data).resolve()) if args.data else None,
            limit=args.limit,
            warehouse_uri=args.warehouse,
            cache_dir=args.cache_dir,
            precision=args.precision,
            batch_size=args.batch_size,
            items=items,
            vllm_gpu_memory_utilization=args.vllm_gpu_memory_utilization,
            **{name: getattr(args, name) for name in CLUSTER_FIELDS},
        )
    print_scores(args.warehouse, eval_batch)
    return 0


def print_scores(warehouse_uri: str, eval_batch: str) -> None:
    import polars as pl

    from genenv.evaluation.bootstrap import METHOD
    from genenv.warehouse.store import Warehouse

    rows = Warehouse(warehouse_uri).read("evaluations").filter(pl.col("eval_id").str.starts_with(eval_batch + "/"))
    interval = pl.format("[{}, {}]", pl.col("ci_low").round(4), pl.col("ci_high").round(4)).alias("95% interval")
    table = rows.select("benchmark", "category", "metric", pl.col("value").round(4), interval, "n")
    with pl.Config(tbl_rows=100, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        print(table)
    print(f"\nEvaluation {eval_batch}; intervals: {METHOD}; per-item outputs and errors:")
    query = f"SELECT * FROM evaluation_items WHERE eval_id LIKE '{eval_batch}/%'"
    print(f'  genenv sql --warehouse {warehouse_uri} "{query}"')
