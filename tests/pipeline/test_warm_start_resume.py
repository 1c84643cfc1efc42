"""The warm start stages each finished epoch: a run stopped mid-warm-start resumes after its last finished epoch,
trains only what is left, and ends with the adapters and training rows an uninterrupted warm start makes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from safetensors.torch import load_file

import genenv.tasks.warm_start as stage
from genenv.config import GenEnvConfig
from genenv.models.policy import ROLES
from genenv.pipeline.context import GenerationRef
from genenv.pipeline.run_records import register_run
from genenv.pipeline.staging import staging_path
from genenv.runtime.handle import ModelRuntime
from genenv.tasks.seed import seed_pool
from genenv.warehouse.checkpoints import checkpoint_uri
from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import assert_same_run, comparable

pytestmark = pytest.mark.slow


class Stopped(Exception):
    """Stands in for the process dying at a crash point: every epoch staged before it stays on disk."""


def _ref(data_dir: Path, model_dir: Path) -> GenerationRef:
    config = GenEnvConfig(
        data_dir=str(data_dir),
        model=str(model_dir),
        domain="arithmetic",
        warm_start_epochs=3,
        warm_start_examples=12,
        train_batch_size=4,
    )
    register_run(Warehouse(config.resolved_warehouse_uri), config, "r1")
    return GenerationRef(config.resolved_warehouse_uri, "r1", 0, ModelRuntime())


def _adapters(ref: GenerationRef) -> dict:
    return {
        role: load_file(Path(checkpoint_uri(ref.warehouse_uri, "r1", 0, role)) / "adapter_model.safetensors")
        for role in ROLES
    }


def test_a_stopped_warm_start_resumes_after_its_last_finished_epoch(tmp_path, tiny_model_dir, monkeypatch) -> None:
    whole = _ref(tmp_path / "whole", tiny_model_dir)
    stage.warm_start.fn(seed_pool.fn(whole))

    trained: list[tuple[str, int]] = []
    sft = stage.weighted_sft

    def recorded_sft(policy, role: str, rows: list, **settings) -> list[dict]:
        trained.append((role, settings["first_epoch"]))
        return sft(policy, role, rows, **settings)

    monkeypatch.setattr(stage, "weighted_sft", recorded_sft)
    epochs_ended = 0

    def stop_every_second_epoch(name: str) -> None:
        nonlocal epochs_ended
        epochs_ended += 1
        if epochs_ended % 2 == 0:
            raise Stopped(name)

    monkeypatch.setattr(stage, "crash_point", stop_every_second_epoch)
    stopped = _ref(tmp_path / "stopped", tiny_model_dir)
    seeds = seed_pool.fn(stopped)
    attempts, models_moved = [], []
    for _ in range(4):  # each attempt as a new process makes it: its own models, nothing in memory
        runtime = ModelRuntime()
        try:
            stage.warm_start.fn(dataclasses.replace(seeds, ref=dataclasses.replace(seeds.ref, runtime=runtime)))
            attempts.append("done")
        except Stopped:
            attempts.append(list(trained))
        models_moved.append((runtime.current.slot.loads, runtime.current.slot.swaps))
    assert trained == [("agent", 0), ("agent", 1), ("agent", 2), ("simulator", 0), ("simulator", 1), ("simulator", 2)]
    # stopped after agent epoch 2, simulator epoch 1, the last epoch (before the adapters were saved); then done
    assert attempts == [trained[:2], trained[:4], trained, "done"]
    assert models_moved == [(1, 0)] * 4  # each attempt loads the last staged adapters once, and swaps none in

    mine, theirs = _adapters(stopped), _adapters(whole)
    for role in ROLES:
        assert mine[role].keys() == theirs[role].keys()
        for name, weight in theirs[role].items():
            assert (mine[role][name] == weight).all(), f"{role} {name} differs from the uninterrupted warm start"
    rows = [ref.warehouse.read("training", run_id="r1", generation=0) for ref in (stopped, whole)]
    assert_same_run(*(comparable(frame, "r1") for frame in rows))
    assert len(rows[0]) == 2 * 3 * 3  # three steps an epoch (12 agent rows, 11 simulator pairs, batches of 4), 3 epochs
    for ref in (stopped, whole):  # the staged epochs are gone once the stage is done
        assert not Path(staging_path(ref, stage.STAGED_EPOCHS, suffix="")).exists()
