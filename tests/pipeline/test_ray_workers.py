"""Rollout workers on a real local Ray cluster (loopback, 2 CPUs): a run whose stages generate on 2 workers, 1 CPU
each, one of them killed with SIGKILL mid-stage, commits what the same run commits in one process, greedy answers
and sampled ones alike."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import torch
from polars.testing import assert_frame_equal

from genenv.config import ConfigError, GenEnvConfig
from genenv.flows.evolve import evolve
from genenv.models.generation import TransformersBackend, row_generators
from genenv.tasks.workers import WorkerSettings, check_room, shard_bounds
from genenv.warehouse.schemas import GENERATION_TABLES
from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import comparable, small_config

ray = pytest.importorskip("ray", reason="the ray extra is not installed here (.venv-vllm); make installs it in .venv")


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A Ray cluster of this test process on 127.0.0.1 (head and raylet), stopped with it: (its GCS address, the
    file the first worker to answer a shard creates as it kills itself; genenv/faults.py)."""
    killed = tmp_path_factory.mktemp("faults") / "worker-killed"
    crash = {"GENENV_CRASH_AT": "worker:answered", "GENENV_CRASH_MARKER": str(killed)}
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        runtime_env={"env_vars": crash},  # the workers' environment only, not this process's
    )
    try:
        yield ray.get_runtime_context().gcs_address, killed
    finally:
        ray.shutdown()


def test_shards_are_consecutive_and_sample_as_in_the_whole_call() -> None:
    assert shard_bounds(5, 2) == [(0, 3), (3, 5)] and shard_bounds(1, 3) == [(0, 1)]
    whole = [g.initial_seed() for g in row_generators(7, 5, "cpu")]
    assert [g.initial_seed() for g in row_generators(7, 2, "cpu", first_row=3)] == whole[3:]
    assert torch.rand(1, generator=row_generators(7, 1, "cpu", first_row=4)[0]).item() == pytest.approx(
        torch.rand(1, generator=row_generators(7, 5, "cpu")[4]).item(), abs=0.0
    )


def test_workers_the_cluster_could_never_place_are_refused(tiny_model_dir: Path) -> None:
    settings = WorkerSettings.of(GenEnvConfig(model=str(tiny_model_dir), ray_address="local", rollout_workers=3))
    with pytest.raises(ConfigError, match="rollout_workers: 3 workers need 3 CPUs and 0 GPUs .* has 2 CPUs and 0 GPUs"):
        check_room(settings, {"CPU": 2.0})
    check_room(settings, {"CPU": 3.0})


@pytest.mark.slow
def test_two_rollout_workers_one_killed_commit_what_one_process_commits(
    finished_run, ray_cluster: tuple[str, Path], tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, reference_run, reference = finished_run
    address, killed = ray_cluster
    config = small_config(tiny_model_dir, tmp_path).replace(
        generations=1, ray_address=address, rollout_workers=2, worker_cpus=1.0
    )

    def not_here(*args, **kwargs):
        raise AssertionError("the flow's process generated: with ray_address only the workers may")

    monkeypatch.setattr(TransformersBackend, "generate", not_here)  # this process's class, not the workers'
    run_id = evolve(config.to_dict())
    warehouse = Warehouse(config.resolved_warehouse_uri)
    assert warehouse.committed(run_id)["generation"].to_list() == [0, 1]
    assert killed.exists(), "no worker was killed: the restart and retry went untested"
    for table in GENERATION_TABLES:
        spread = warehouse.read(table, run_id=run_id)
        alone = reference.read(table, run_id=reference_run).filter(pl.col("generation") <= 1)
        assert_frame_equal(comparable(spread, run_id), comparable(alone, reference_run))
