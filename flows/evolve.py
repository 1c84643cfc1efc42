"""The evolve flow: register (or resume) a run, then run every generation not yet committed."""

from __future__ import annotations

from typing import Any

from prefect import flow

from genenv.config import config_from_dict, load_config
from genenv.flows.generation import run_generation
from genenv.tasks.runs import flow_run_run_id, name_flow_run, start_run, stored_config
from genenv.tasks.runtime import model_runtime
from genenv.warehouse.store import Warehouse


@flow(name="genenv-evolve")
def evolve(
    config: dict[str, Any] | None = None,
    config_file: str | None = None,
    overrides: dict[str, Any] | None = None,
    run_id: str | None = None,
) -> str:
    """Generation 0 (seeds, warm start) then generations 1..T; resumes after the last committed one.

    The config is `config` (all fields), or `config_file` (YAML) with `overrides` on top, as deployments
    pass it. With `run_id` of an existing run, the run resumes with its stored config: the file and overrides
    apply on top of it, and one that would change how results are made is refused (start_run). Without it, the
    run id comes from this flow run, so Retry in the UI (the same flow run again) resumes the same run.
    """
    settings = config_from_dict(config) if config is not None else load_config(config_file, overrides)
    stored = stored_config(Warehouse(settings.resolved_warehouse_uri), run_id) if run_id else None
    if stored is not None and config is None:
        located = {"data_dir": settings.data_dir, "warehouse_uri": settings.warehouse_uri}
        settings = load_config(config_file, overrides, base=stored.replace(**located))
    run_id = start_run(settings, run_id or flow_run_run_id(settings.run_name))
    name_flow_run(run_id, [f"run:{settings.run_name}", f"domain:{settings.domain}"])
    warehouse_uri = settings.resolved_warehouse_uri
    done = set(Warehouse(warehouse_uri).committed(run_id)["generation"].to_list())
    with model_runtime():
        for generation in range(settings.generations + 1):
            if generation not in done:
                run_generation(warehouse_uri, run_id, generation)
    return run_id
