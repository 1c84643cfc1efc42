"""The warehouse maintenance flow: compact every table, vacuum old files, never break a committed snapshot."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, task

from genenv.warehouse import compaction
from genenv.warehouse.schemas import TABLES
from genenv.warehouse.store import Warehouse


@task(name="maintain-table")
def maintain_table(warehouse_uri: str, table: str, retain_hours: float, keep_versions: list[int]) -> dict[str, Any]:
    return compaction.maintain_table(Warehouse(warehouse_uri), table, retain_hours, keep_versions)


@flow(name="genenv-maintain-warehouse")
def maintain_warehouse(warehouse_uri: str, retain_hours: float = 168) -> list[dict[str, Any]]:
    """Compaction then vacuum with `retain_hours` retention, keeping every version a committed generation pins."""
    pinned = compaction.pinned_versions(Warehouse(warehouse_uri))
    report = [maintain_table(warehouse_uri, table, retain_hours, pinned.get(table, [])) for table in TABLES]
    logger = get_run_logger()
    for line in report:
        logger.info("maintenance %s", line)
    return report
