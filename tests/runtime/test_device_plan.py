"""The memory plan where a policy trains: on a GPU it refuses a config the device cannot hold, naming the phase,
before the model loads, and switches activation checkpointing on when only that fits. CUDA is not on these machines:
the GPU here is a fake (its name says so) reporting a size; the plan and the runtime are the real ones."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from genenv.config import ConfigError, GenEnvConfig
from genenv.models.memory_plan import Architecture, PlanSettings, memory_plan
from genenv.models.policy import PolicyPair
from genenv.runtime.checkpoints import NO_CHECKPOINTS
from genenv.runtime.device_plan import planned_checkpointing
from genenv.runtime.handle import ModelRuntime


class FakeGpu:
    def __init__(self, total_memory: float) -> None:
        self.total_memory = total_memory


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch):
    def of_size(total: float) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _: FakeGpu(total))

    return of_size


def test_with_a_fake_gpu_the_plan_switches_checkpointing_on_or_refuses(tiny_model_dir: Path, fake_gpu) -> None:
    config = GenEnvConfig(model=str(tiny_model_dir), train_batch_size=64, agent_max_new_tokens=512)
    settings = PlanSettings.of(config)
    arch = Architecture.of(config.model, tiny_model_dir)
    without = memory_plan(arch, settings, 2**50).phase("train").total
    checkpointed = memory_plan(arch, PlanSettings.of(config.replace(checkpoint_activations=True)), 2**50)
    assert planned_checkpointing(settings, config.model, tiny_model_dir) is False  # no GPU: the config's switch
    fake_gpu(without)
    assert planned_checkpointing(settings, config.model, tiny_model_dir) is False
    fake_gpu((without + checkpointed.phase("train").total) / 2)
    assert planned_checkpointing(settings, config.model, tiny_model_dir) is True
    fake_gpu(checkpointed.phase("train").total / 2)
    with pytest.raises(ConfigError, match="memory plan: the train phase needs"):
        planned_checkpointing(settings, config.model, tiny_model_dir)


def test_with_a_fake_gpu_too_small_the_runtime_refuses_before_the_model_loads(
    tiny_model_dir: Path, fake_gpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PolicyPair, "load", lambda *a, **k: pytest.fail("loaded a model the plan refuses"))
    fake_gpu(2**20)
    runtime = ModelRuntime()
    with pytest.raises(ConfigError, match="memory plan: the load phase needs"):
        runtime.training(GenEnvConfig(model=str(tiny_model_dir)), NO_CHECKPOINTS)
