"""One GPU shared by the vLLM engine and the trainer, by construction: the engine sleeps before any trainer copy
loads or trains, and PyTorch's cached blocks go back to the device, after its queued work, before the engine wakes.

vLLM's sleep mode and CUDA's allocator exist only on a GPU: these tests stand a recording fake in for each (their
names say so) and check the order the real runtime and engine code call them in."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import genenv.models.memory
import genenv.models.vllm
from genenv.config import GenEnvConfig
from genenv.models.policy import PolicyPair
from genenv.models.vllm import EngineSettings, VllmEngine
from genenv.runtime.checkpoints import NO_CHECKPOINTS
from genenv.runtime.handle import ModelRuntime
from genenv.runtime.vllm_runtime import VllmRuntime


class FakeGpuEngine:
    """Stands in for `VllmEngine` on a GPU: records when it starts, sleeps and closes."""

    def __init__(self, settings: EngineSettings, events: list[str]) -> None:
        self.settings = settings
        self.events = events
        self.asleep = False
        events.append("engine starts")

    def sleep(self) -> None:
        if not self.asleep:
            self.events.append("engine sleeps")
            self.asleep = True

    def close(self) -> None:
        self.events.append("engine closes")


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What happens to the device, in order: whole-policy loads, and the fake engine's calls."""
    happened: list[str] = []
    load = PolicyPair.load.__func__

    def recorded_load(cls, *args, **kwargs):
        happened.append("policy loads")
        return load(cls, *args, **kwargs)

    monkeypatch.setattr(PolicyPair, "load", classmethod(recorded_load))
    monkeypatch.setattr(genenv.models.vllm, "VllmEngine", lambda settings: FakeGpuEngine(settings, happened))
    return happened


def test_with_a_fake_gpu_engine_it_sleeps_before_the_trainer_loads_or_trains(
    tiny_model_dir: Path, tmp_path: Path, events: list[str]
) -> None:
    config = GenEnvConfig(model=str(tiny_model_dir), data_dir=str(tmp_path), backend="vllm")
    runtime = ModelRuntime()
    try:
        runtime.backend(config, NO_CHECKPOINTS)  # the first stage that generates: policy, then engine
        assert isinstance(runtime.current, VllmRuntime)
        runtime.training(config, NO_CHECKPOINTS)  # a stage that trains
        assert events == ["policy loads", "engine starts", "engine sleeps"]
        runtime.current.engine.asleep = False  # the next stage generated: the engine woke
        runtime.training(config.replace(seed=1), NO_CHECKPOINTS)  # a stage training another copy of the base
        assert events[3:] == ["engine sleeps", "policy loads"]
        runtime.current.engine.asleep = False
        runtime.backend(config.replace(precision="bfloat16"), NO_CHECKPOINTS)  # another base copy, another engine
        assert events[5:] == ["engine sleeps", "policy loads", "engine closes", "engine starts"]
    finally:
        runtime.release()
    assert events[-1] == "engine closes"


class RecordingLlm:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def sleep(self, level: int) -> None:
        self.events.append(f"sleep level {level}")

    def wake_up(self) -> None:
        self.events.append("wake up")


def test_with_a_fake_gpu_the_engine_wakes_after_the_cache_is_emptied_and_the_device_synchronised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[str] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: events.append("synchronize"))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: events.append("empty cache"))
    monkeypatch.setattr(genenv.models.memory, "return_freed_memory", lambda: events.append("trim host heap"))
    engine = object.__new__(VllmEngine)  # the real class's sleep and wake_up over a recording LLM
    engine.cuda, engine._asleep, engine.llm = True, False, RecordingLlm(events)
    engine.wake_up()
    assert events == []  # awake: nothing to do
    engine.sleep()
    engine.sleep()
    engine.wake_up()
    assert events == ["sleep level 1", "synchronize", "empty cache", "trim host heap", "wake up"]
