"""A run's records: its id, its `runs` row with the resolved config, its name in the Prefect UI (the start-run and
fork-run stages use them)."""

from __future__ import annotations

import json
import re
import secrets
from datetime import UTC, datetime

from prefect import get_client
from prefect.context import FlowRunContext

from genenv.config import GenEnvConfig
from genenv.warehouse.schemas import SCHEMA_VERSION, now
from genenv.warehouse.store import Warehouse


def new_run_id(run_name: str, started: datetime | None = None, suffix: str | None = None) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", run_name.lower()).strip("-")[:40] or "run"
    return f"{slug}-{(started or datetime.now(UTC)):%Y%m%d-%H%M%S}-{suffix or secrets.token_hex(2)}"


def flow_run_run_id(run_name: str) -> str:
    """The genenv run of the Prefect flow run executing this code, derived from that flow run (its creation time
    and id), so Retry in the UI, a retried deployment run or a crashed worker's rescheduled run (the same flow run
    executed again) finds the same genenv run and resumes it. Outside a flow run: a new id."""
    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    if flow_run is None or flow_run.created is None:
        return new_run_id(run_name)
    return new_run_id(run_name, flow_run.created, flow_run.id.hex[:4])


def name_flow_run(run_id: str, tags: list[str]) -> None:
    """Show the genenv run in the Prefect UI: the flow run takes the run id as its name, plus searchable tags."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    with get_client(sync_client=True) as client:
        client.update_flow_run(context.flow_run.id, name=run_id, tags=sorted({*context.flow_run.tags, *tags}))


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
