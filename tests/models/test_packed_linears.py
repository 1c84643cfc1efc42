from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest
import torch

from genenv.models.generation import SamplingSettings, TransformersBackend, encode_prompt
from genenv.models.packed_linears import _PackedForward, can_pack, packed_linears
from genenv.models.policy import LoraSettings, PolicyPair

CONVERSATIONS = [[{"role": "user", "content": "Book a table for " + "two " * n}] for n in (1, 4, 2, 6)]


def logits(policy: PolicyPair, packed: bool) -> torch.Tensor:
    """Next-token logits of CONVERSATIONS (left-padded) through the merged agent, with or without packing."""
    prompts = [encode_prompt(policy.tokenizer, c) for c in CONVERSATIONS]
    batch = policy.tokenizer.pad({"input_ids": prompts}, return_tensors="pt")
    with policy.merged("agent"), torch.inference_mode(), policy.autocast():
        policy.model.eval()
        if not packed:
            return policy.model(**batch).logits.float()
        with packed_linears(policy.model, policy.compute_dtype):
            return policy.model(**batch).logits.float()


def packed_layers(policy: PolicyPair) -> list[str]:
    return [n for n, m in policy.model.named_modules() if isinstance(m.__dict__.get("forward"), _PackedForward)]


@pytest.mark.skipif(not can_pack(torch.bfloat16), reason="this CPU or build cannot pack bfloat16 weights")
def test_bfloat16_logits_are_bit_identical_to_plain_linear_layers(tiny_model_dir: Path) -> None:
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(), precision="bfloat16")
    assert torch.equal(logits(policy, packed=True), logits(policy, packed=False))


@pytest.mark.skipif(not can_pack(torch.float32), reason="this build cannot pack float32 weights")
def test_float32_logits_match_plain_linear_layers_to_rounding(policy: PolicyPair) -> None:
    packed, plain = logits(policy, packed=True), logits(policy, packed=False)
    torch.testing.assert_close(packed, plain, rtol=1e-5, atol=1e-5)
    assert torch.equal(packed.argmax(-1), plain.argmax(-1))


@pytest.mark.skipif(not can_pack(torch.float32), reason="this build cannot pack float32 weights")
def test_every_base_linear_is_packed_inside_the_block_and_plain_after(policy: PolicyPair) -> None:
    base_linears = [n for n, m in policy.model.named_modules() if isinstance(m, torch.nn.Linear) and ".lora_" not in n]
    with policy.merged("agent"), packed_linears(policy.model, torch.float32):
        assert packed_layers(policy) == base_linears
        assert any(n.endswith("lm_head") for n in base_linears)
    assert packed_layers(policy) == []
    with pytest.raises(KeyError), packed_linears(policy.model, torch.float32):
        raise KeyError("a failing generation")
    assert packed_layers(policy) == []


@pytest.mark.skipif(not can_pack(torch.float32), reason="this build cannot pack float32 weights")
def test_a_layer_that_fails_to_pack_leaves_every_layer_plain(policy: PolicyPair) -> None:
    made: list[_PackedForward] = []

    def pack_two_then_fail(module: torch.nn.Linear, dtype: torch.dtype) -> _PackedForward:
        if len(made) == 2:
            raise RuntimeError("oneDNN could not pack this weight")
        made.append(_PackedForward(module, dtype))
        return made[-1]

    with (
        mock.patch("genenv.models.packed_linears._PackedForward", pack_two_then_fail),
        pytest.raises(RuntimeError, match="could not pack"),
        packed_linears(policy.model, torch.float32),
    ):
        pass
    assert len(made) == 2 and packed_layers(policy) == []


def test_generation_packs_only_inside_the_call(policy: PolicyPair) -> None:
    seen: list[list[str]] = []
    hook = policy.model.get_base_model().register_forward_pre_hook(lambda *_: seen.append(packed_layers(policy)))
    try:
        TransformersBackend(policy).generate("agent", CONVERSATIONS[:1], SamplingSettings(max_new_tokens=2))
    finally:
        hook.remove()
    assert seen and all(bool(layers) == can_pack(torch.float32) for layers in seen)
    assert packed_layers(policy) == []


def test_dtypes_onednn_does_not_pack_leave_the_layers_plain(policy: PolicyPair) -> None:
    assert not can_pack(torch.float16)
    with packed_linears(policy.model, torch.float16):
        assert packed_layers(policy) == []
