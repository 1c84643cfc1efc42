"""Stage: register a run (or find it again to resume)."""

from __future__ import annotations

from genenv.config import ConfigError, GenEnvConfig, resume_differences
from genenv.pipeline.options import stage
from genenv.pipeline.run_config import stored_config
from genenv.pipeline.run_records import new_run_id, register_run
from genenv.warehouse.store import Warehouse


@stage("start-run")
def start_run(config: GenEnvConfig, run_id: str | None = None) -> str:
    """Register a new run, or resume `run_id` when `config` shapes results as the run's stored config does;
    a resume that would change them is refused before anything runs (a fork is the way to try new settings)."""
    warehouse = Warehouse(config.resolved_warehouse_uri)
    if run_id is not None and (stored := stored_config(warehouse, run_id)) is not None:
        changed = resume_differences(stored, config)
        if changed:
            raise ConfigError(
                f"run {run_id} cannot resume with other settings ({'; '.join(changed)}): its generations were "
                f"made with the stored ones. To try them from one of its generations, fork it: "
                f"genenv rerun --run {run_id} --generation G --set KEY=VALUE"
            )
        return run_id
    run_id = run_id or new_run_id(config.run_name)
    register_run(warehouse, config, run_id)
    return run_id
