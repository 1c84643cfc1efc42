"""Re-run one generation from its stored snapshot as a new run (a fork), never touching the parent."""

from __future__ import annotations

from prefect import flow

from genenv.flows.generation import run_generation
from genenv.parameters import ConfigOverrides, override_values
from genenv.tasks.fork import fork_run, plan_fork
from genenv.validation import validate
from genenv.warehouse.store import Warehouse


@flow(name="genenv-rerun-generation", flow_run_name="{run_id}-g{generation}-rerun")
def rerun_generation(
    warehouse_uri: str,
    run_id: str,
    generation: int,
    fork: str | None = None,
    overrides: ConfigOverrides | None = None,
) -> str:
    """Fork `run_id` at generation G-1 (adapters, pools, config, seeds), apply `overrides`, run generation G.

    Args:
        warehouse_uri: Root of the warehouse holding the run (a folder or s3://...).
        run_id: The genenv run to fork (`genenv runs` lists them).
        generation: The generation G to run again, from the snapshot of G-1.
        fork: Name of the new run (its run_name); empty: `<parent name>-rerun-g<G>`.
        overrides: Config fields to change in the fork; empty fields keep the parent's value.
    """
    config = validate(plan_fork(Warehouse(warehouse_uri), run_id, generation, override_values(overrides)))
    fork_id = fork_run(warehouse_uri, run_id, generation, config.to_dict(), fork)
    run_generation(warehouse_uri, fork_id, generation)
    return fork_id
