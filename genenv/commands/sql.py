"""genenv sql: one read-only query over the committed warehouse."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DEFAULT_WAREHOUSE = str(Path("data") / "warehouse")


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("sql", help="read-only SQL over the warehouse (committed generations only)")
    parser.add_argument("sql", help="one SELECT; tables: runs generations tasks pool trajectories batches training")
    parser.add_argument("--warehouse", default=os.environ.get("GENENV_WAREHOUSE", DEFAULT_WAREHOUSE))
    parser.add_argument("--run", help="only this run")
    parser.add_argument("--as-of-generation", type=int, help="the snapshot of this generation (needs --run)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import polars as pl

    from warehouse.query import query
    from warehouse.store import Warehouse

    result = query(Warehouse(args.warehouse), args.sql, run_id=args.run, as_of_generation=args.as_of_generation)
    if args.format == "csv":
        sys.stdout.write(result.write_csv())
    elif args.format == "json":
        sys.stdout.write(result.write_ndjson())
    else:
        table_style = {"tbl_rows": 200, "tbl_cols": 50, "fmt_str_lengths": 80, "tbl_width_chars": 200}
        with pl.Config(**table_style, tbl_hide_dataframe_shape=True):
            print(result)
    return 0
