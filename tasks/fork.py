"""Stage: start a run from another run's snapshot, to re-run one generation or branch an experiment.

The new run gets a copy of the parent's rows for generations 0..G-1 (so every stage reads only its own
run) and generation rows pointing at the parent's adapters, which it only reads. Nothing is written
into the parent run. Everything is checked before the first write.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from genenv.config import GenEnvConfig, config_from_dict, load_config
from genenv.errors import RerunError
from genenv.pipeline.options import stage
from genenv.pipeline.run_records import new_run_id, register_run
from genenv.warehouse.checkpoints import adapter_exists
from genenv.warehouse.schemas import GENERATION_TABLES
from genenv.warehouse.store import Warehouse, registered_config


def plan_fork(
    warehouse: Warehouse, parent_run_id: str, generation: int, overrides: dict[str, Any] | None
) -> GenEnvConfig:
    """Validate the request and return the fork's config; raises RerunError or ConfigError."""
    parent = warehouse.read("runs", run_id=parent_run_id)
    if parent.is_empty():
        raise RerunError(f"no run {parent_run_id!r} in the warehouse at {warehouse.root_uri}")
    committed = warehouse.committed(parent_run_id)
    done = committed["generation"].to_list()
    if generation < 1 or generation not in done:
        raise RerunError(
            f"run {parent_run_id} has no generation {generation} to re-run (committed: {done}; "
            "generation 0 is the warm start: start a new run instead)"
        )
    snapshot = committed.filter(generation=generation - 1).row(0, named=True)
    for role in ("agent", "simulator"):
        folder = snapshot[f"{role}_checkpoint"]
        if not adapter_exists(folder):
            where = f"{parent_run_id} generation {generation - 1}"
            raise RerunError(f"the {role} checkpoint of {where} is missing: {folder}")
    stored = registered_config(parent.row(0, named=True))
    return load_config(None, {**(overrides or {}), "generations": str(generation)}, base=stored)


@stage("fork-run")
def fork_run(warehouse_uri: str, parent_run_id: str, generation: int, config: dict, fork: str | None) -> str:
    """Create the fork holding the parent's generations 0..G-1, run as `config` (`plan_fork`'s, checked by the
    caller); returns its run id."""
    warehouse = Warehouse(warehouse_uri)
    stored = config_from_dict(config)
    settings = stored.replace(run_name=fork or f"{stored.run_name}-rerun-g{generation}")
    run_id = new_run_id(settings.run_name)
    register_run(warehouse, settings, run_id, parent=(parent_run_id, generation - 1))
    copy_snapshot(warehouse, parent_run_id, run_id, generation - 1)
    return run_id


def copy_snapshot(warehouse: Warehouse, parent_run_id: str, run_id: str, through_generation: int) -> None:
    """Give `run_id` the parent's rows and committed generations 0..through_generation (adapters by reference).

    Each table's copy is one Delta commit and is skipped when already there, so a retry completes a failed copy.
    """
    for table in GENERATION_TABLES:
        if warehouse.read(table, run_id=run_id).is_empty():
            rows = warehouse.read(table, run_id=parent_run_id)
            rows = rows.filter(pl.col("generation") <= through_generation).with_columns(run_id=pl.lit(run_id))
            warehouse.append(table, rows)
    committed = warehouse.committed(parent_run_id).filter(pl.col("generation") <= through_generation)
    for row in committed.iter_rows(named=True):
        warehouse.commit_generation(
            run_id,
            row["generation"],
            agent_checkpoint=row["agent_checkpoint"],
            simulator_checkpoint=row["simulator_checkpoint"],
            config_hash=row["config_hash"],
            seed=row["seed"],
            metrics=json.loads(row["metrics"]),
        )
