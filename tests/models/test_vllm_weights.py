"""The checkpoint `merged_weights` hands vLLM's in-place reload: plain torch, so it runs without vLLM."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.vllm import merged_weights


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_merged_weights_are_the_checkpoint_with_the_adapter_folded_in(tiny_model_dir: Path, precision: str) -> None:
    """The base checkpoint's names, each once (a tied output layer stays out even where bf16 storage unties
    it in memory), with W + BA·scale where the adapter has one."""
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(), precision=precision)
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B.agent." in name:
                param.normal_(0.0, 0.5)
    weights = dict(merged_weights(policy, "agent"))
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert sorted(weights) == sorted(name for name, _ in base.named_parameters())
    folded = {name: weight for name, _, weight in policy.merged_layers("agent")}
    q_proj = "base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight"
    assert weights["model.layers.0.self_attn.q_proj.weight"].equal(folded[q_proj])
    assert not folded[q_proj].equal(base.state_dict()["model.layers.0.self_attn.q_proj.weight"])
