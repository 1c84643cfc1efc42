"""The warehouse: append-only Delta tables under one root URI, and generation commits.

A generation becomes visible to readers only when its `generations` row is written; that row records
the Delta version of every table, which is the generation's snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

import duckdb
import pandera.errors
import polars as pl
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import TableNotFoundError

from genenv.config import GenEnvConfig, config_from_dict
from genenv.errors import WarehouseError, first_line
from genenv.warehouse.schemas import GENERATION_TABLES, PARTITIONS, SCHEMA_VERSION, TABLES, frame, now, polars_schema
from genenv.warehouse.storage import REQUEST_LIMITS, storage_options, table_uri, translated

__all__ = ["Warehouse", "WarehouseError"]

TABLE_CONFIGURATION = {"delta.enableExpiredLogCleanup": "false"}
"""Keep every log entry: a generation's snapshot must stay readable by time travel (vacuum is guarded separately)."""


class Warehouse:
    def __init__(self, root_uri: str, pinned: Mapping[str, int] | None = None) -> None:
        self.root_uri = root_uri.rstrip("/")
        self.pinned: Mapping[str, int] = dict(pinned or {})
        """Tables read at a fixed version (what an earlier stage handed on) unless a read names another; never
        written through this object."""
        self._options = storage_options(self.root_uri)
        self._delta_options = None if self._options is None else {**self._options, **REQUEST_LIMITS}
        """What genenv's own delta-rs calls use: bounded waits and retries on top of the credentials."""

    @property
    def storage_options(self) -> dict[str, str] | None:
        """For polars/deltalake readers of the same tables (held in memory only)."""
        return self._options

    # --- low level ---
    def uri(self, table: str) -> str:
        if table not in TABLES:
            raise WarehouseError(f"unknown table {table!r}; known: {sorted(TABLES)}")
        return table_uri(self.root_uri, table)

    def table(self, table: str, version: int | None = None) -> DeltaTable | None:
        uri = self.uri(table)
        with translated(uri):
            try:
                return DeltaTable(uri, version=version, storage_options=self._delta_options)
            except TableNotFoundError:
                return None

    def version(self, table: str) -> int | None:
        delta = self.table(table)
        return None if delta is None else delta.version()

    def append(self, table: str, rows: list[dict[str, Any]] | pl.DataFrame) -> int | None:
        """Validate rows against the table's schema and append them as one Delta commit; returns its version."""
        uri = self.uri(table)
        if table in self.pinned:
            raise WarehouseError(f"table {table!r} is pinned at version {self.pinned[table]} here, for reading only")
        if len(rows) == 0:
            return self.version(table)
        schema = polars_schema(table)
        data = rows.select(list(schema)).cast(schema) if isinstance(rows, pl.DataFrame) else frame(table, rows)
        try:
            TABLES[table].validate(data, lazy=True)
        except pandera.errors.SchemaErrors as exc:
            raise WarehouseError(f"rows for table {table!r} break its schema: {exc}") from None
        delta = self.table(table)
        # An existing table keeps the partitioning it was created with, so older tables stay writable; columns
        # added to the schema since it was created are added to it (older rows read them as null).
        creation: dict[str, Any] = (
            {"partition_by": delta.metadata().partition_columns, **_added_columns(delta, schema)}
            if delta is not None
            else {
                "partition_by": PARTITIONS[table],
                "configuration": TABLE_CONFIGURATION,
                "description": f"genenv {table}, schema v{SCHEMA_VERSION}",
            }
        )
        with translated(uri):
            write_deltalake(
                delta if delta is not None else uri,
                data.to_arrow(),
                mode="append",
                **creation,
                commit_properties=CommitProperties(custom_metadata={"genenv.schema_version": str(SCHEMA_VERSION)}),
                storage_options=self._delta_options,
            )
        return delta.version() if delta is not None else self.version(table)

    def read(self, table: str, version: int | None = None, **equals: Any) -> pl.DataFrame:
        """All rows (committed or not) of a table at a version (default: the pinned one, else the latest), filtered
        by column equality."""
        delta = self.table(table, self.pinned.get(table) if version is None else version)
        if delta is None:
            return frame(table, [])
        filters = [(name, "=", value) for name, value in equals.items()] or None
        with translated(self.uri(table)), unreadable_as_one_line(table):
            data = cast(pl.DataFrame, pl.from_arrow(delta.to_pyarrow_table(filters=filters)))  # a table: a frame
        schema = polars_schema(table)
        missing = [pl.lit(None, dtype).alias(name) for name, dtype in schema.items() if name not in data.columns]
        return data.with_columns(missing).cast(schema, strict=False).select(list(schema))

    # --- generation-level view ---
    def has_rows(self, table: str, run_id: str, generation: int, **equals: Any) -> bool:
        return not self.read(table, run_id=run_id, generation=generation, **equals).is_empty()

    def committed(self, run_id: str) -> pl.DataFrame:
        return self.read("generations", run_id=run_id).sort("generation")

    def commit_generation(
        self,
        run_id: str,
        generation: int,
        *,
        agent_checkpoint: str,
        simulator_checkpoint: str,
        config_hash: str,
        seed: int,
        metrics: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Write the `generations` row that makes generation g visible; idempotent."""
        existing = self.read("generations", run_id=run_id, generation=generation)
        if not existing.is_empty():
            return existing.row(0, named=True)
        row = {
            "run_id": run_id,
            "generation": generation,
            "status": "committed",
            "committed_at": now(),
            "table_versions": json.dumps({t: self.version(t) for t in GENERATION_TABLES}),
            "agent_checkpoint": agent_checkpoint,
            "simulator_checkpoint": simulator_checkpoint,
            "config_hash": config_hash,
            "seed": seed,
            "metrics": json.dumps(dict(metrics), sort_keys=True),
        }
        self.append("generations", [row])
        return row

    def run(self, run_id: str) -> dict[str, Any]:
        rows = self.read("runs", run_id=run_id)
        if rows.is_empty():
            raise WarehouseError(f"no run {run_id!r} in the warehouse at {self.root_uri}")
        return rows.row(0, named=True)

    def run_config(self, run_id: str) -> GenEnvConfig:
        """The config a run was registered with."""
        return registered_config(self.run(run_id))


def registered_config(run: Mapping[str, Any]) -> GenEnvConfig:
    """The config of a `runs` row: the one place a stored `config_json` is parsed."""
    return config_from_dict(json.loads(run["config_json"]))


@contextmanager
def unreadable_as_one_line(table: str) -> Iterator[None]:
    """A damaged data file (truncated, not Parquet) as one WarehouseError naming the table and the reader's reason,
    not a page of traceback from every reader of the table."""
    try:
        yield
    except (pa.ArrowException, duckdb.Error) as exc:
        raise WarehouseError(f"table {table!r} cannot be read, a file of it is damaged: {first_line(exc)}") from None


def _added_columns(delta: DeltaTable, schema: dict[str, pl.DataType]) -> dict[str, str]:
    """Delta's schema merge, only when the table lacks columns the schema now has."""
    existing = set(delta.schema().to_arrow().names)
    return {"schema_mode": "merge"} if set(schema) - existing else {}
