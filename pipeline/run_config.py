"""The config a run runs with: the one it was registered with, and what a command resuming it asks on top. No
Prefect here: a command resolves the config before it starts Prefect."""

from __future__ import annotations

from genenv.config import GenEnvConfig, load_config
from genenv.warehouse.store import Warehouse, registered_config


def stored_config(warehouse: Warehouse, run_id: str) -> GenEnvConfig | None:
    """The config a run was registered with, or None when the warehouse has no such run."""
    rows = warehouse.read("runs", run_id=run_id)
    return None if rows.is_empty() else registered_config(rows.row(0, named=True))


def config_to_run(config_file: str | None, changes: dict, run_id: str | None) -> GenEnvConfig:
    """The config `genenv evolve` runs with: the file and changes; for a run the warehouse holds, its stored config
    with them on top (the data folder and warehouse stay where this command says). The command and the flow check
    this one config, the one that runs; a change that would shape results differently is refused by `start_run`."""
    settings = load_config(config_file, changes)
    stored = stored_config(Warehouse(settings.resolved_warehouse_uri), run_id) if run_id else None
    if stored is None:
        return settings
    located = {"data_dir": settings.data_dir, "warehouse_uri": settings.warehouse_uri}
    return load_config(config_file, changes, base=stored.replace(**located))
