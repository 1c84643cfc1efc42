"""`genenv`: run the co-evolution loop and query its warehouse.

genenv evolve [--config FILE] [--set key=value ...] [--run-id RUN]
genenv sql "SELECT ..." [--warehouse URI] [--run RUN] [--as-of-generation G] [--format table|csv|json]
genenv config            # every config field with its default and meaning
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from genenv.config import ConfigError, GenEnvConfig, field_help, load_config, parse_overrides

DEFAULT_WAREHOUSE = str(Path("data") / "warehouse")


def _prepare_environment(config: GenEnvConfig) -> None:
    """Keep caches and Prefect's state inside the project's data folder; no analytics calls home."""
    data = Path(config.data_dir).resolve()
    (data / "prefect").mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HOME", str(data / "hf"))
    os.environ.setdefault("PREFECT_HOME", str(data / "prefect"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def cmd_evolve(args: argparse.Namespace) -> int:
    config = load_config(args.config, parse_overrides(args.set))
    _prepare_environment(config)
    from flows.evolve import evolve

    run_id = evolve(config.to_dict(), run_id=args.run_id)
    warehouse = config.resolved_warehouse_uri
    print(f"\nRun {run_id} finished. Its data is in {warehouse}")
    print("Try, for example:")
    print(
        f'  genenv sql --warehouse {warehouse} "SELECT generation, avg(reward) FROM trajectories GROUP BY 1 ORDER BY 1"'
    )
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    from warehouse.query import query
    from warehouse.store import Warehouse

    result = query(Warehouse(args.warehouse), args.sql, run_id=args.run, as_of_generation=args.as_of_generation)
    if args.format == "csv":
        sys.stdout.write(result.write_csv())
    elif args.format == "json":
        sys.stdout.write(result.write_ndjson())
    else:
        import polars as pl

        table_style = {"tbl_rows": 200, "tbl_cols": 50, "fmt_str_lengths": 80, "tbl_width_chars": 200}
        with pl.Config(**table_style, tbl_hide_dataframe_shape=True):
            print(result)
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    for name, kind, default, help_text in field_help():
        print(f"{name} ({kind}, default {default!r})\n    {help_text}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="genenv", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    evolve = commands.add_parser("evolve", help="run (or resume) a co-evolution run")
    evolve.add_argument("--config", help="YAML file of config fields (see `genenv config`)")
    evolve.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one field")
    evolve.add_argument("--run-id", help="resume this run instead of starting a new one")
    evolve.set_defaults(handler=cmd_evolve)

    sql = commands.add_parser("sql", help="read-only SQL over the warehouse (committed generations only)")
    sql.add_argument(
        "sql", help="one SELECT statement; tables: runs generations tasks pool trajectories batches training"
    )
    sql.add_argument("--warehouse", default=os.environ.get("GENENV_WAREHOUSE", DEFAULT_WAREHOUSE))
    sql.add_argument("--run", help="only this run")
    sql.add_argument("--as-of-generation", type=int, help="the snapshot of this generation (needs --run)")
    sql.add_argument("--format", choices=("table", "csv", "json"), default="table")
    sql.set_defaults(handler=cmd_sql)

    config = commands.add_parser("config", help="list every config field")
    config.set_defaults(handler=cmd_config)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from warehouse.store import WarehouseError

    try:
        return args.handler(args)
    except (ConfigError, WarehouseError) as exc:
        print(f"genenv: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
