"""Compaction and vacuum that never break a committed generation's snapshot.

Every `generations` row pins a Delta version of each generation table (its snapshot); `as_of_generation`
reads those versions. Vacuum is therefore told to keep every pinned version (delta-rs `keep_versions`) on top
of the requested retention, and the `generations` table itself is compacted but never vacuumed: its history
is the warehouse clock that `as_of_version` reads.
"""

from __future__ import annotations

import json
import math
from typing import Any

from genenv.warehouse.schemas import GENERATION_TABLES, TABLES
from genenv.warehouse.storage import translated
from genenv.warehouse.store import Warehouse


def pinned_versions(warehouse: Warehouse) -> dict[str, list[int]]:
    """Per table, the Delta versions some committed generation (of any run) points to."""
    pinned: dict[str, set[int]] = {table: set() for table in GENERATION_TABLES}
    for recorded in warehouse.read("generations")["table_versions"]:
        for table, version in json.loads(recorded).items():
            if version is not None and table in pinned:
                pinned[table].add(int(version))
    return {table: sorted(versions) for table, versions in pinned.items()}


def compact(warehouse: Warehouse, table: str) -> dict[str, Any] | None:
    """Rewrite small files into large ones (data unchanged, a new Delta version); None if the table is absent."""
    delta = warehouse.table(table)
    if delta is None:
        return None
    with translated(warehouse.uri(table)):
        metrics = delta.optimize.compact()
    return {"files_added": metrics["numFilesAdded"], "files_removed": metrics["numFilesRemoved"]}


def vacuum(warehouse: Warehouse, table: str, retain_hours: float, keep_versions: list[int]) -> list[str]:
    """Delete files unreferenced for `retain_hours`, except those of `keep_versions` and of the latest version."""
    delta = warehouse.table(table)
    if delta is None:
        return []
    with translated(warehouse.uri(table)):
        return delta.vacuum(
            retention_hours=math.ceil(retain_hours),
            dry_run=False,
            enforce_retention_duration=False,
            keep_versions=keep_versions,
        )


def maintain_table(warehouse: Warehouse, table: str, retain_hours: float, keep_versions: list[int]) -> dict[str, Any]:
    """Compact one table, then vacuum it (never `generations`); returns what was done."""
    if retain_hours < 0:
        raise ValueError(f"retain_hours must be >= 0 (got {retain_hours})")
    compacted = compact(warehouse, table)
    if compacted is None:
        return {"table": table, "skipped": "absent"}
    removed = [] if table == "generations" else vacuum(warehouse, table, retain_hours, keep_versions)
    return {"table": table, **compacted, "files_vacuumed": len(removed), "pinned_versions": len(keep_versions)}


def maintain(warehouse: Warehouse, retain_hours: float = 168) -> list[dict[str, Any]]:
    """Every table, in order; the maintenance flow runs the same steps as Prefect tasks."""
    pinned = pinned_versions(warehouse)
    return [maintain_table(warehouse, table, retain_hours, pinned.get(table, [])) for table in TABLES]
