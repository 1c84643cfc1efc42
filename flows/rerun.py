"""Re-run one generation from its stored snapshot as a new run (a fork), never touching the parent."""

from __future__ import annotations

from prefect import flow

from genenv.flows.generation import run_generation
from genenv.tasks.fork import fork_run


@flow(name="genenv-rerun-generation")
def rerun_generation(
    warehouse_uri: str,
    run_id: str,
    generation: int,
    fork: str | None = None,
    overrides: dict[str, str] | None = None,
) -> str:
    """Fork `run_id` at generation G-1 (adapters, pools, config, seeds), apply `overrides`, run generation G."""
    fork_id = fork_run(warehouse_uri, run_id, generation, fork, overrides)
    run_generation(warehouse_uri, fork_id, generation)
    return fork_id
