"""docs/domains.md's proof: the arithmetic domain, written from that page's steps alone, runs one generation of the
real flow on the tiny model, selected by name from a config like any built-in."""

from __future__ import annotations

import pytest

from genenv.domains.base import get_domain
from genenv.pipeline.context import GenerationRef, load_tasks
from genenv.runtime.handle import ModelRuntime
from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import small_config

pytestmark = pytest.mark.slow


def test_the_arithmetic_domain_runs_a_generation(tiny_model_dir, prefect_server, tmp_path):
    from genenv.flows.evolve import evolve

    config = small_config(tiny_model_dir, tmp_path).replace(domain="arithmetic", generations=1, probe_tasks=2)
    run_id = evolve(config.to_dict())
    warehouse = Warehouse(config.resolved_warehouse_uri)
    assert warehouse.committed(run_id)["generation"].to_list() == [0, 1]

    domain = get_domain("arithmetic", config)
    tasks_table = warehouse.read("tasks", run_id=run_id)
    seeds = tasks_table.filter(origin="seed")
    assert sorted(seeds["task_id"]) == sorted(s.task_id for s in domain.load_seeds())
    assert seeds["heldout"].any() and not seeds["heldout"].all()  # whole families held out, not every one
    written = tasks_table.filter(origin="simulator")
    assert written.height == config.seeds_per_generation * config.variations_per_seed
    # The simulator's every output is kept: valid with a computed answer, or rejected with one of the domain's reasons.
    for row in written.iter_rows(named=True):
        assert row["raw_output"] is not None
        assert row["valid"] == (row["reject_reason"] is None)

    # Every stored reward is what the domain's exact-match verifier gives the stored completion.
    trajectories = warehouse.read("trajectories", run_id=run_id)
    assert {"pool", "heldout"} <= set(trajectories["purpose"])
    known = load_tasks(GenerationRef(config.resolved_warehouse_uri, run_id, 1, ModelRuntime()))
    for row in trajectories.iter_rows(named=True):
        assert domain.verify(row["completion"], known[row["task_id"]]).reward == row["reward"]
