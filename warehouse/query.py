"""The analysts' read-only SQL surface: DuckDB views over the committed part of every table.

`connect()` exposes a view per table holding only rows of committed generations, read from the Parquet
files of a Delta snapshot: by DuckDB's own Parquet reader on a local root (its file access is then limited
to the warehouse folder), through an Arrow dataset on S3 (no DuckDB extension needed). Snapshots:
- latest (default): every committed generation, read from each table's latest version;
- `as_of_generation=G` (with a run): exactly the table versions recorded when G was committed;
- `as_of_version=V`: the warehouse as it stood at Delta version V of the `generations` table (each
  commit adds one version, so V is a warehouse-wide clock); tables are pinned to the versions the
  latest generation visible then recorded.
The connection is then locked: no other file access, no settings changes.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass

import duckdb
import polars as pl
import pyarrow as pa
from deltalake import DeltaTable

from genenv.warehouse.schemas import GENERATION_TABLES, TABLES, frame, polars_schema
from genenv.warehouse.storage import is_remote, local_path, translated
from genenv.warehouse.store import Warehouse, WarehouseError, unreadable_as_one_line

QUERY_SECONDS = 300.0
"""Default limit on one query's run time (`genenv sql --timeout`)."""
MEMORY_LIMIT = "2GB"
"""Default limit on a connection's memory (`genenv sql --memory-limit`), in DuckDB's notation; DuckDB's own default
is 80% of the machine's memory, which a runaway query (generate_series(1, 1e9)) would take."""
IN_MEMORY_BYTES = 16 * 2**20
"""Snapshots of a table up to this much Parquet are held in the connection's memory (a few times as much)."""


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class _Scope:
    """Which rows of a table a connection shows: a run (or all), and for generation tables the committed
    (run, generation) pairs of its snapshot."""

    run_id: str | None
    committed: frozenset[tuple[str, int]] | None

    def keeps(self, partition: dict[str, object]) -> bool:
        """Whether a file with these partition values can hold visible rows (absent values: cannot tell)."""
        run, generation = partition.get("run_id"), partition.get("generation")
        if self.run_id is not None and run is not None and run != self.run_id:
            return False
        if self.committed is not None and run is not None and generation is not None:
            return (run, generation) in self.committed
        return True

    def exact(self, partitions: list[str]) -> bool:
        """Whether pruning files by their partition values alone selects exactly the visible rows."""
        return (self.run_id is None or "run_id" in partitions) and (
            self.committed is None or {"run_id", "generation"} <= set(partitions)
        )


@dataclass(frozen=True)
class _Files:
    """The Parquet files of a snapshot that can hold visible rows."""

    paths: list[str]
    """Local paths DuckDB reads itself; empty when `native` is False."""
    count: int
    size: int
    """Bytes of Parquet in all."""
    native: bool
    """False on object stores (DuckDB would need httpfs, which cannot be installed) and where a partition
    value is escaped in the path (DuckDB would read it escaped): those are read through the Arrow dataset."""


def _files(delta: DeltaTable, scope: _Scope) -> _Files:
    """Prune the snapshot's files by their partition values, once, so queries never open the others."""
    actions = pa.table(delta.get_add_actions(flatten=True)).to_pydict()
    paths, names = actions["path"], [k for k in actions if k.startswith("partition.")]
    kept = [
        i
        for i in range(len(paths))
        if scope.keeps({name.removeprefix("partition."): actions[name][i] for name in names})
    ]
    native = not is_remote(delta.table_uri) and not any("%" in paths[i] or "://" in paths[i] for i in kept)
    return _Files(
        [str(local_path(delta.table_uri) / paths[i]) for i in kept] if native else [],
        len(kept),
        sum(actions["size_bytes"][i] for i in kept),
        native,
    )


def _view(
    con: duckdb.DuckDBPyConnection, table: str, delta: DeltaTable | None, scope: _Scope, in_memory_bytes: int
) -> list[str]:
    """Create the view `table` over a resolved snapshot; the view holds only rows `scope` shows. Returns the
    local files the view reads when queried: the only ones the locked connection may open.

    Local snapshots are scanned by DuckDB's own Parquet reader over the exact file list (projection and
    filter pushdown, parallel, footers cached per connection); others through the snapshot's Arrow dataset.
    A snapshot of at most `in_memory_bytes` of Parquet is read once into the connection's memory instead:
    opening its many small files would cost each query more than answering it.
    """
    schema = polars_schema(table)
    files = _files(delta, scope) if delta is not None else None
    partitions = delta.metadata().partition_columns if delta is not None else []
    scan = f"_{table}"
    if files is None or files.count == 0:
        con.register(scan, frame(table, []).to_arrow())
        present, exact = set(schema), True
    elif files.native:
        types = ", ".join(f"{_literal(c)}: {'BIGINT' if c == 'generation' else 'VARCHAR'}" for c in partitions)
        hive = f"hive_partitioning = true, hive_types = {{{types}}}" if partitions else "hive_partitioning = false"
        scan = f"read_parquet([{', '.join(map(_literal, files.paths))}], union_by_name = true, {hive})"
        present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {scan}").fetchall()}
        exact = scope.exact(partitions)
    else:
        with translated(delta.table_uri):
            con.register(scan, delta.to_pyarrow_dataset())
        present, exact = set(delta.schema().to_arrow().names) | set(partitions), False
    # Files written before a column joined the schema lack it: those rows read it as null, as Warehouse.read does.
    missing = _duckdb_types(con, table) if set(schema) - present else {}
    columns = ", ".join(f't."{c}"' if c in present else f'CAST(NULL AS {missing[c]}) AS "{c}"' for c in schema)
    committed = run = ""
    if not exact and scope.committed is not None:
        committed = " SEMI JOIN _committed g ON t.run_id = g.run_id AND t.generation = g.generation"
    if not exact and scope.run_id is not None:
        run = f" WHERE t.run_id = {_literal(scope.run_id)}"
    rows = f"SELECT {columns} FROM {scan} t{committed}{run}"
    if files is not None and 0 < files.size <= in_memory_bytes:
        with translated(delta.table_uri):
            con.execute(f"CREATE TABLE _{table}_snapshot AS {rows}")
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM _{table}_snapshot")
        return []
    con.execute(f"CREATE VIEW {table} AS {rows}")
    return files.paths if files is not None else []


def _duckdb_types(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """The DuckDB type of each column of `table`, read off an empty frame of its schema."""
    con.register("_empty", frame(table, []).to_arrow())
    try:
        return {row[0]: row[1] for row in con.execute("DESCRIBE SELECT * FROM _empty").fetchall()}
    finally:
        con.unregister("_empty")


def _snapshot(
    warehouse: Warehouse, run_id: str | None, as_of_generation: int | None, as_of_version: int | None
) -> tuple[pl.DataFrame, dict[str, int | None] | None]:
    """The committed generations a reader sees, and the table versions to pin (None: latest)."""
    if as_of_generation is not None and run_id is None:
        raise WarehouseError("as_of_generation needs a run: pass run_id too")
    if as_of_version is not None:
        latest = warehouse.version("generations")
        if latest is None or not 0 <= as_of_version <= latest:
            raise WarehouseError(f"no warehouse version {as_of_version}: the generations table is at {latest}")
    committed = warehouse.read("generations", version=as_of_version, **({"run_id": run_id} if run_id else {}))
    if as_of_generation is not None:
        committed = committed.filter(pl.col("generation") <= as_of_generation)
        snapshot = committed.filter(pl.col("generation") == as_of_generation)
        if snapshot.is_empty():
            raise WarehouseError(f"run {run_id!r} has no committed generation {as_of_generation}")
        return committed, json.loads(snapshot["table_versions"][0])
    if as_of_version is not None:
        recorded = [json.loads(v) for v in committed["table_versions"]]
        pinned = {t: max((r[t] for r in recorded if r.get(t) is not None), default=None) for t in GENERATION_TABLES}
        return committed, pinned
    return committed, None


def connect(
    warehouse: Warehouse | str,
    run_id: str | None = None,
    as_of_generation: int | None = None,
    as_of_version: int | None = None,
    tables: set[str] | None = None,
    in_memory_bytes: int = IN_MEMORY_BYTES,
    memory_limit: str = MEMORY_LIMIT,
) -> duckdb.DuckDBPyConnection:
    """A locked DuckDB connection with one view per table (or per table in `tables`), committed rows only.

    The snapshot is resolved here, once: each table's Delta log is read and its file list pruned to the
    visible partitions, so the connection's queries only scan Parquet, and tables of at most `in_memory_bytes`
    of Parquet are read into memory once. For notebooks:
    `con = connect("s3://bucket/warehouse"); con.sql("SELECT ...").pl()`, as many queries as you like.
    """
    if isinstance(warehouse, str):
        warehouse = Warehouse(warehouse)
    if not is_remote(warehouse.root_uri) and not local_path(warehouse.root_uri).is_dir():
        raise WarehouseError(
            f"no warehouse at {warehouse.root_uri}: the folder does not exist (a run keeps its warehouse in "
            "<data_dir>/warehouse; pass it with --warehouse or GENENV_WAREHOUSE)"
        )
    committed, versions = _snapshot(warehouse, run_id, as_of_generation, as_of_version)
    wanted = set(TABLES) if tables is None else set(tables) & set(TABLES)
    con = duckdb.connect()
    try:
        con.execute(f"SET memory_limit = {_literal(memory_limit)}")
    except duckdb.Error:
        con.close()
        raise WarehouseError(f"memory limit {memory_limit!r} is not a size DuckDB reads (e.g. 2GB, 512MB)") from None
    con.execute("SET parquet_metadata_cache = true")
    con.register("_committed", committed.to_arrow())
    con.execute("CREATE VIEW generations AS SELECT * FROM _committed")
    pairs = frozenset(zip(committed["run_id"], committed["generation"], strict=True))
    readable: list[str] = []
    for table in sorted(wanted - {"generations"}):
        generation_table = table in GENERATION_TABLES
        pinned = generation_table and versions is not None
        version = versions.get(table) if pinned else None
        delta = None if pinned and version is None else warehouse.table(table, version)
        with unreadable_as_one_line(table):
            readable += _view(con, table, delta, _Scope(run_id, pairs if generation_table else None), in_memory_bytes)
    # By construction, not by filtering statements: the connection may open exactly the snapshot's committed
    # Parquet files (no directory, so no Delta log, no uncommitted file, nowhere to create one), then nothing else.
    con.execute(f"SET allowed_paths = [{', '.join(map(_literal, readable))}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def check_read_only(sql: str) -> None:
    """Refuse anything but queries: writes, ATTACH, INSTALL/LOAD, COPY, SET, PRAGMA, CALL and DDL, and an EXPLAIN
    of any of them (EXPLAIN ANALYZE runs the statement it explains)."""
    for statement in _statements(sql):
        kind = statement.type
        if kind == duckdb.StatementType.EXPLAIN:
            kind = _explained_kind(statement.query)
            if kind != duckdb.StatementType.SELECT:
                raise WarehouseError(
                    f"read-only warehouse: EXPLAIN is allowed of one SELECT only ({statement.query.strip()[:60]!r})"
                )
        if kind != duckdb.StatementType.SELECT:
            raise WarehouseError(
                f"read-only warehouse: {kind.name} statements are refused ({statement.query.strip()[:60]!r})"
            )


_EXPLAIN = re.compile(r"\s*EXPLAIN\s+(?:ANALY[SZ]E\s+)?(?:\([^()]*\)\s*)?", re.IGNORECASE)
"""What precedes the explained statement: EXPLAIN, optionally ANALYZE, optionally options in parentheses."""


def _explained_kind(sql: str) -> duckdb.StatementType:
    """The type of the one statement an EXPLAIN explains; EXPLAIN itself where that cannot be told."""
    explained = _EXPLAIN.match(sql)
    try:
        inner = _statements(sql[explained.end() :]) if explained else []
    except WarehouseError:
        inner = []
    return inner[0].type if len(inner) == 1 else duckdb.StatementType.EXPLAIN


def _statements(sql: str) -> list[duckdb.Statement]:
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise WarehouseError(f"SQL does not parse: {exc}") from None
    if not statements:
        raise WarehouseError("no SQL statement given")
    return statements


def referenced_tables(sql: str) -> set[str]:
    """Warehouse tables a query names, so only those are opened (each costs a Delta log read, more on S3)."""
    try:
        names = duckdb.get_table_names(sql)
    except duckdb.Error:
        return set(TABLES)
    return {name.split(".")[-1].lower() for name in names} & set(TABLES)


def query(
    warehouse: Warehouse | str,
    sql: str,
    run_id: str | None = None,
    as_of_generation: int | None = None,
    as_of_version: int | None = None,
    timeout: float = QUERY_SECONDS,
    memory_limit: str = MEMORY_LIMIT,
) -> pl.DataFrame:
    """Run one read-only query; returns a polars DataFrame. Nothing is read into memory ahead: one query scans
    each file at most once, and only the columns it needs. A query that runs past `timeout` seconds is stopped, and
    one that needs more than `memory_limit` fails, each saying which limit it hit."""
    check_read_only(sql)
    tables = referenced_tables(sql) or None  # none named (SHOW TABLES, SELECT 1): every table, so SHOW lists them
    con = connect(warehouse, run_id, as_of_generation, as_of_version, tables, 0, memory_limit)
    watchdog = threading.Timer(timeout, con.interrupt)
    watchdog.start()
    try:
        return con.sql(sql).pl()
    except duckdb.InterruptException:
        raise WarehouseError(f"query stopped after {timeout:g} s (the limit; genenv sql --timeout)") from None
    except duckdb.OutOfMemoryException:
        limit = f"{memory_limit} (the limit; genenv sql --memory-limit)"
        raise WarehouseError(f"query needed more memory than {limit}") from None
    except duckdb.Error as exc:
        raise WarehouseError(f"query failed: {exc}") from None
    finally:
        watchdog.cancel()
        con.close()
