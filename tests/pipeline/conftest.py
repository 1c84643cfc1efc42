import pytest

from genenv.config import GenEnvConfig
from genenv.warehouse.store import Warehouse


@pytest.fixture(scope="session")
def finished_run(tiny_model_dir, prefect_server, tmp_path_factory):
    """A 3-generation run (0, 1, 2) of the real flow on the tiny model, shared by the pipeline tests."""
    from genenv.flows.evolve import evolve

    config = small_config(tiny_model_dir, tmp_path_factory.mktemp("run"))
    run_id = evolve(config.to_dict())
    return config, run_id, Warehouse(config.resolved_warehouse_uri)


def small_config(model_dir, data_dir) -> GenEnvConfig:
    return GenEnvConfig(
        run_name="e2e",
        model=str(model_dir),
        data_dir=str(data_dir),
        generations=2,
        seeds_per_generation=3,
        variations_per_seed=2,
        rollouts_per_task=2,
        pool_tasks_per_generation=2,
        simulator_max_new_tokens=24,
        agent_max_new_tokens=12,
        warm_start_epochs=1,
        warm_start_examples=32,
        max_heldout=4,
        train_batch_size=16,
        generation_batch_size=32,
    )
