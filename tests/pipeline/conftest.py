import polars as pl
import pytest
from polars.testing import assert_frame_equal

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
        p_hat_rollouts=3,
        pool_tasks_per_generation=2,
        simulator_max_new_tokens=24,
        agent_max_new_tokens=12,
        warm_start_epochs=1,
        warm_start_examples=32,
        max_heldout=4,
        train_batch_size=16,
        generation_batch_size=32,
    )


ID_COLUMNS = ("task_id", "batch_id", "trajectory_id", "seed_task_id")
TIMING_COLUMNS = ("seconds", "committed_at", "created_at")


def comparable(frame: pl.DataFrame, run_id: str) -> pl.DataFrame:
    """A run's rows without what differs between two runs of one config (the run id in ids, timings), sorted."""
    frame = frame.drop("run_id", *[c for c in TIMING_COLUMNS if c in frame.columns])
    for column in ID_COLUMNS:
        if column in frame.columns:
            frame = frame.with_columns(pl.col(column).str.replace_all(f"{run_id}/", "", literal=True))
    return frame.sort(frame.columns[: min(4, frame.width)], nulls_last=True)


def assert_same_run(mine: pl.DataFrame, theirs: pl.DataFrame) -> None:
    """Two computations of one run's table agree: every column but the floats exactly (texts, ids, verdicts), the
    floats (losses, gradient norms, log-probs) to 1e-4 of their size. fp32 sums in another process can take another
    order; on CI an agent's first warm-start step had a gradient norm 2.3e-5 apart (1.082846 against 1.082821), over
    polars' default rtol of 1e-5, while every text and every later step agreed."""
    assert_frame_equal(mine, theirs, rtol=1e-4, atol=1e-6)
