"""The analysts' read-only SQL surface: DuckDB views over the committed part of every table.

`connect()` registers each Delta table as an Arrow dataset (no DuckDB extension needed) and exposes a
view per table holding only rows of committed generations, optionally as of one generation's snapshot.
The connection is then locked: no file access, no settings changes.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from warehouse.schemas import GENERATION_TABLES, frame
from warehouse.store import Warehouse, WarehouseError

_READ_ONLY_TYPES = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


def connect(warehouse: Warehouse, run_id: str | None = None, as_of_generation: int | None = None):
    """A DuckDB connection with views runs, generations, tasks, pool, trajectories, batches, training."""
    if as_of_generation is not None and run_id is None:
        raise WarehouseError("as_of_generation needs a run: pass run_id too")
    con = duckdb.connect()
    committed = warehouse.read("generations", **({"run_id": run_id} if run_id else {}))
    versions: dict[str, Any] = {}
    if as_of_generation is not None:
        committed = committed.filter(committed["generation"] <= as_of_generation)
        snapshot = committed.filter(committed["generation"] == as_of_generation)
        if snapshot.is_empty():
            raise WarehouseError(f"run {run_id!r} has no committed generation {as_of_generation}")
        versions = json.loads(snapshot["table_versions"][0])
    con.register("_generations", committed.to_arrow())
    con.execute("CREATE VIEW generations AS SELECT * FROM _generations")
    for table in ("runs", "evaluations", "evaluation_items"):
        con.register(f"_{table}", warehouse.read(table, **({"run_id": run_id} if run_id else {})).to_arrow())
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM _{table}")
    for table in GENERATION_TABLES:
        pinned = as_of_generation is not None
        delta = None if pinned and versions.get(table) is None else warehouse.table(table, versions.get(table))
        con.register(f"_{table}", delta.to_pyarrow_dataset() if delta else frame(table, []).to_arrow())
        con.execute(
            f"CREATE VIEW {table} AS SELECT t.* FROM _{table} t "
            "SEMI JOIN _generations g ON t.run_id = g.run_id AND t.generation = g.generation"
        )
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def check_read_only(sql: str) -> None:
    """Refuse anything but queries: writes, ATTACH, INSTALL/LOAD, COPY, SET, PRAGMA and DDL."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise WarehouseError(f"SQL does not parse: {exc}") from None
    if not statements:
        raise WarehouseError("no SQL statement given")
    for statement in statements:
        if statement.type not in _READ_ONLY_TYPES:
            kind = statement.type.name
            raise WarehouseError(
                f"read-only warehouse: {kind} statements are refused ({statement.query.strip()[:60]!r})"
            )


def query(warehouse: Warehouse, sql: str, run_id: str | None = None, as_of_generation: int | None = None):
    """Run one read-only query; returns a polars DataFrame."""
    check_read_only(sql)
    con = connect(warehouse, run_id, as_of_generation)
    try:
        return con.sql(sql).pl()
    except duckdb.Error as exc:
        raise WarehouseError(f"query failed: {exc}") from None
    finally:
        con.close()
