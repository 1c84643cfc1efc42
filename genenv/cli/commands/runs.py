"""genenv runs / genenv show RUN: runs, their lineage, generations and headline metrics."""

from __future__ import annotations

import argparse
import json

from genenv.cli.commands.sql import DEFAULT_WAREHOUSE

HEADLINE = ("valid_rate", "mean_p_hat", "band_share", "fresh_success", "heldout_success", "agent_loss")


def add_parser(commands: argparse._SubParsersAction) -> None:
    runs = commands.add_parser("runs", help="list runs with their parent and progress")
    runs.add_argument("--warehouse", default=DEFAULT_WAREHOUSE)
    runs.set_defaults(handler=list_runs)
    show = commands.add_parser("show", help="one run: lineage and per-generation metrics")
    show.add_argument("run")
    show.add_argument("--warehouse", default=DEFAULT_WAREHOUSE)
    show.set_defaults(handler=show_run)


def list_runs(args: argparse.Namespace) -> int:
    from genenv.warehouse.query import query
    from genenv.warehouse.store import Warehouse

    # last_generation: the last committed generation (a run of T generations ends at T; generation 0 is the warm start).
    table = query(
        Warehouse(args.warehouse),
        "SELECT r.run_id, r.run_name, r.created_at, r.model, "
        "r.parent_run_id || ' @g' || r.parent_generation AS parent, max(g.generation) AS last_generation "
        "FROM runs r LEFT JOIN generations g USING (run_id) GROUP BY ALL ORDER BY r.created_at",
    )
    _print(table)
    return 0


def lineage(warehouse, run_id: str) -> list[str]:
    """The run, its parent, the parent's parent, ... as 'run @gN' links."""
    chain, current = [run_id], warehouse.run(run_id)
    while current["parent_run_id"]:
        chain.append(f"{current['parent_run_id']} @g{current['parent_generation']}")
        current = warehouse.run(current["parent_run_id"])
    return chain


def show_run(args: argparse.Namespace) -> int:
    import polars as pl

    from genenv.warehouse.store import Warehouse

    warehouse = Warehouse(args.warehouse)
    run = warehouse.run(args.run)
    print(f"run {run['run_id']} ({run['run_name']}), model {run['model']}, domain {run['domain']}")
    print("lineage: " + " <- ".join(lineage(warehouse, args.run)))
    rows = [
        {"generation": g["generation"], **{k: json.loads(g["metrics"]).get(k) for k in HEADLINE}}
        for g in warehouse.committed(args.run).iter_rows(named=True)
    ]
    _print(pl.DataFrame(rows) if rows else pl.DataFrame({"generation": []}))
    return 0


def _print(table) -> None:
    import polars as pl

    with pl.Config(tbl_rows=500, tbl_cols=20, fmt_str_lengths=60, tbl_width_chars=200, tbl_hide_dataframe_shape=True):
        print(table)
