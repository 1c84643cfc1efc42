"""The checkpoint `merged_weights` hands vLLM's in-place reload: plain torch, so it runs without vLLM."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.vllm import merged_weights, without_checkpoint_cast_warnings, without_expected_reload_warnings


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_merged_weights_are_the_checkpoint_with_the_adapter_folded_in(tiny_model_dir: Path, precision: str) -> None:
    """The base checkpoint's names, each once (a tied output layer stays out even where bf16 storage unties
    it in memory), with W + BA·scale where the adapter has one, each in the engine's dtype."""
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(), precision=precision)
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B.agent." in name:
                param.normal_(0.0, 0.5)
    dtype = getattr(torch, precision)
    weights = dict(merged_weights(policy, "agent", dtype))
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert sorted(weights) == sorted(name for name, _ in base.named_parameters())
    folded = {name: weight for name, _, weight in policy.merged_layers("agent")}
    q_proj = "base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight"
    assert {weight.dtype for weight in weights.values()} == {dtype}
    assert weights["model.layers.0.self_attn.q_proj.weight"].equal(folded[q_proj].to(dtype))
    assert not folded[q_proj].equal(base.state_dict()["model.layers.0.self_attn.q_proj.weight"])


@pytest.mark.parametrize("tied", [True, False])
def test_only_layers_without_pushed_weights_are_quiet(tied: bool, caplog: pytest.LogCaptureFixture) -> None:
    """vLLM's reload warns for each layer no pushed weight reached: the rotary embedding and a tied output layer
    are expected (nothing to push) and quiet; any other layer, an untied output layer included, still warns."""
    layerwise = logging.getLogger("vllm.model_executor.model_loader.reload.layerwise")
    with caplog.at_level(logging.WARNING, logger=layerwise.name), without_expected_reload_warnings(tied):
        for layer in ("RotaryEmbedding", "ParallelLMHead", "QKVParallelLinear"):
            layerwise.warning("%s: Failed to load weights", layer)
    warned = {record.args[0] for record in caplog.records}
    assert warned == ({"QKVParallelLinear"} if tied else {"ParallelLMHead", "QKVParallelLinear"})


def test_only_the_cast_the_engine_asks_for_is_counted_instead_of_warned(caplog: pytest.LogCaptureFixture) -> None:
    """A float32 checkpoint loaded into a bf16 engine: one count instead of a warning per tensor; another mismatch
    (here float16 into bf16) still warns."""
    utils = logging.getLogger("vllm.model_executor.models.utils")
    message = "Attempted to load weight %s with dtype %s into parameter with dtype %s"
    with caplog.at_level(logging.WARNING, logger=utils.name), without_checkpoint_cast_warnings("bfloat16") as cast:
        for name, dtype in (("norm.weight", torch.float32), ("embed.weight", torch.float32), ("x", torch.float16)):
            utils.warning(message, name, dtype, torch.bfloat16)
    assert cast.dropped == 2 and [record.args[0] for record in caplog.records] == ["x"]
