from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest
import torch

from genenv.models.cpu.onednn_linears import OneDnnLinear, PackedLinear, onednn_supports, packed_linears
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.sampling import SamplingSettings, encode_prompt
from genenv.models.transformers_backend import TransformersBackend

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
    return [n for n, m in policy.model.named_modules() if isinstance(m.__dict__.get("forward"), PackedLinear)]


@pytest.mark.skipif(not onednn_supports(torch.bfloat16), reason="this CPU or build cannot pack bfloat16 weights")
def test_bfloat16_logits_are_bit_identical_to_plain_linear_layers(tiny_model_dir: Path) -> None:
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(), precision="bfloat16")
    assert torch.equal(logits(policy, packed=True), logits(policy, packed=False))


@pytest.mark.skipif(not onednn_supports(torch.float32), reason="this build cannot pack float32 weights")
def test_float32_logits_match_plain_linear_layers_to_rounding(policy: PolicyPair) -> None:
    packed, plain = logits(policy, packed=True), logits(policy, packed=False)
    torch.testing.assert_close(packed, plain, rtol=1e-5, atol=1e-5)
    assert torch.equal(packed.argmax(-1), plain.argmax(-1))


@pytest.mark.skipif(not onednn_supports(torch.float32), reason="this build cannot pack float32 weights")
def test_every_base_linear_is_packed_inside_the_block_and_plain_after(policy: PolicyPair) -> None:
    base_linears = [n for n, m in policy.model.named_modules() if isinstance(m, torch.nn.Linear) and ".lora_" not in n]
    with policy.merged("agent"), packed_linears(policy.model, torch.float32):
        assert packed_layers(policy) == base_linears
        assert any(n.endswith("lm_head") for n in base_linears)
    assert packed_layers(policy) == []
    with pytest.raises(KeyError), packed_linears(policy.model, torch.float32):
        raise KeyError("a failing generation")
    assert packed_layers(policy) == []


@pytest.mark.skipif(not onednn_supports(torch.float32), reason="this build cannot pack float32 weights")
def test_a_layer_that_fails_to_pack_leaves_every_layer_plain(policy: PolicyPair) -> None:
    made: list[PackedLinear] = []

    def pack_two_then_fail(weight: torch.Tensor, bias: torch.Tensor | None) -> PackedLinear:
        if len(made) == 2:
            raise RuntimeError("oneDNN could not pack this weight")
        made.append(PackedLinear(weight, bias))
        return made[-1]

    with (
        mock.patch("genenv.models.cpu.onednn_linears.PackedLinear", pack_two_then_fail),
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
    assert seen and all(bool(layers) == onednn_supports(torch.float32) for layers in seen)
    assert packed_layers(policy) == []


def test_a_pytorch_the_private_ops_were_not_checked_on_keeps_every_layer_plain(
    policy: PolicyPair, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback: plain `linear` layers in generation and training, computing what oneDNN's layers compute."""
    expected = logits(policy, packed=False)
    monkeypatch.setattr(torch, "__version__", "9.99.0")
    onednn_supports.cache_clear()
    try:
        assert not onednn_supports(torch.float32) and not onednn_supports(torch.bfloat16)
        with packed_linears(policy.model, torch.float32):
            assert packed_layers(policy) == []
        fallback = PolicyPair.load(tiny_model_dir, LoraSettings())
        assert not any(isinstance(m, OneDnnLinear) for m in fallback.model.modules())
        torch.testing.assert_close(logits(fallback, packed=True), expected, rtol=1e-5, atol=1e-5)
    finally:
        monkeypatch.undo()
        onednn_supports.cache_clear()


def test_dtypes_onednn_does_not_pack_leave_the_layers_plain(policy: PolicyPair) -> None:
    assert not onednn_supports(torch.float16)
    with packed_linears(policy.model, torch.float16):
        assert packed_layers(policy) == []


def lora_gradients(policy: PolicyPair, ids: torch.Tensor) -> dict[str, torch.Tensor]:
    policy.activate("agent")
    policy.model.zero_grad()
    policy.model(input_ids=ids, labels=ids).loss.backward()
    return {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}


@pytest.mark.skipif(not onednn_supports(torch.float32), reason="this build cannot multiply float32 by oneDNN")
def test_fp32_frozen_layers_train_through_onednn_with_the_gradients_of_plain_layers(tiny_model_dir: Path) -> None:
    policy = PolicyPair.load(tiny_model_dir, LoraSettings())
    with torch.no_grad():  # B = 0 would give A no gradient
        for name, param in policy.model.named_parameters():
            if "lora_B.agent." in name:
                param.normal_(0.0, 0.1, generator=torch.Generator().manual_seed(1))
    onednn = [m for m in policy.model.modules() if isinstance(m, OneDnnLinear)]
    base = [n for n, m in policy.model.named_modules() if isinstance(m, torch.nn.Linear) and ".lora_" not in n]
    assert len(onednn) == len(base) and not any(isinstance(m, OneDnnLinear) for m in lora_layers(policy))
    ids = torch.tensor([[1, 40, 41, 42, 43, 60, 61, 7, 9]])
    through_onednn = lora_gradients(policy, ids)
    for module in onednn:
        module.__class__ = torch.nn.Linear
    plain = lora_gradients(policy, ids)
    agent_lora = {f"{n}.weight" for n, m in policy.model.named_modules() if m in lora_layers(policy) and ".agent" in n}
    assert through_onednn.keys() == plain.keys() == agent_lora
    for name, grad in plain.items():
        torch.testing.assert_close(through_onednn[name], grad, rtol=1e-4, atol=1e-6)
        assert grad.abs().sum() > 0


def test_a_trainable_weight_gets_its_gradient_from_the_plain_product(tiny_model_dir: Path) -> None:
    policy = PolicyPair.load(tiny_model_dir, LoraSettings())
    down = policy.model.get_base_model().model.layers[0].mlp.down_proj
    assert isinstance(down, OneDnnLinear) or not onednn_supports(torch.float32)
    down.weight.requires_grad = True
    ids = torch.tensor([[1, 40, 41, 42]])
    policy.model(input_ids=ids, labels=ids).loss.backward()
    assert down.weight.grad is not None and down.weight.grad.abs().sum() > 0


def test_bfloat16_policies_keep_plain_layers(tiny_model_dir: Path) -> None:
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(), precision="bfloat16")
    assert not any(isinstance(m, OneDnnLinear) for m in policy.model.modules())


def lora_layers(policy: PolicyPair) -> list[torch.nn.Module]:
    return [m for n, m in policy.model.named_modules() if isinstance(m, torch.nn.Linear) and ".lora_" in n]
