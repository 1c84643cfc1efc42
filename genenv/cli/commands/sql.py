"""genenv sql: one read-only query over the committed warehouse."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DEFAULT_WAREHOUSE = str(Path("data") / "warehouse")
FORMATS = ("table", "csv", "json", "parquet")


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("sql", help="read-only SQL over the warehouse (committed generations only)")
    parser.add_argument(
        "sql",
        help="one SELECT; tables: runs generations tasks pool trajectories turns batches training evaluations "
        "evaluation_items (see docs/cookbook.md)",
    )
    parser.add_argument("--warehouse", default=os.environ.get("GENENV_WAREHOUSE", DEFAULT_WAREHOUSE))
    parser.add_argument("--run", help="only this run")
    snapshot = parser.add_mutually_exclusive_group()
    snapshot.add_argument("--as-of-generation", type=int, help="the snapshot of this generation (needs --run)")
    snapshot.add_argument("--as-of-version", type=int, help="the warehouse at this Delta version of `generations`")
    parser.add_argument("--format", choices=FORMATS, help="default: from --output's suffix, else table")
    parser.add_argument("--timeout", type=float, help="stop the query after this many seconds (default 300)")
    parser.add_argument("--memory-limit", help="the most memory the query may use, e.g. 512MB (default 2GB)")
    parser.add_argument("--output", type=Path, help="write the result to this file instead of stdout")
    parser.set_defaults(handler=run)


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return args.format
    suffix = args.output.suffix.lstrip(".").lower() if args.output else ""
    return {"csv": "csv", "json": "json", "ndjson": "json", "parquet": "parquet"}.get(suffix, "table")


def run(args: argparse.Namespace) -> int:
    import polars as pl

    from genenv.warehouse.query import query
    from genenv.warehouse.store import Warehouse, WarehouseError

    fmt = _format(args)
    if fmt == "parquet" and args.output is None:
        raise WarehouseError("--format parquet needs --output FILE")
    result = query(
        Warehouse(args.warehouse),
        args.sql,
        run_id=args.run,
        as_of_generation=args.as_of_generation,
        as_of_version=args.as_of_version,
        **{name: value for name in ("timeout", "memory_limit") if (value := getattr(args, name)) is not None},
    )
    if fmt == "parquet":
        result.write_parquet(args.output)
        return 0
    if fmt == "csv":
        text = result.write_csv()
    elif fmt == "json":
        text = result.write_ndjson()
    else:
        table_style = {"tbl_rows": 200, "tbl_cols": 50, "fmt_str_lengths": 80, "tbl_width_chars": 200}
        with pl.Config(**table_style, tbl_hide_dataframe_shape=True):
            text = f"{result}\n"
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0
