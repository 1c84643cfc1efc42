"""Stage: register a run (or find it again to resume)."""

from __future__ import annotations

import json
import re
import secrets
from datetime import UTC, datetime

from genenv.config import GenEnvConfig
from genenv.tasks.options import stage
from genenv.warehouse.schemas import SCHEMA_VERSION, now
from genenv.warehouse.store import Warehouse


def new_run_id(run_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", run_name.lower()).strip("-")[:40] or "run"
    return f"{slug}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def register_run(
    warehouse: Warehouse, config: GenEnvConfig, run_id: str, parent: tuple[str, int] | None = None
) -> None:
    """The `runs` row: the resolved config, and for a fork its parent (run, generation)."""
    warehouse.append(
        "runs",
        [
            {
                "run_id": run_id,
                "run_name": config.run_name,
                "created_at": now(),
                "config_json": json.dumps(config.to_dict(), sort_keys=True),
                "config_hash": config.hash(),
                "model": config.model,
                "domain": config.domain,
                "parent_run_id": parent[0] if parent else None,
                "parent_generation": parent[1] if parent else None,
                "schema_version": SCHEMA_VERSION,
            }
        ],
    )


@stage("start-run")
def start_run(config: GenEnvConfig, run_id: str | None = None) -> str:
    """Register a new run; an existing run id is resumed as stored."""
    warehouse = Warehouse(config.resolved_warehouse_uri)
    if run_id is not None and not warehouse.read("runs", run_id=run_id).is_empty():
        return run_id
    run_id = run_id or new_run_id(config.run_name)
    register_run(warehouse, config, run_id)
    return run_id
