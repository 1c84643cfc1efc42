from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers.modeling_layers import GradientCheckpointingLayer

from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.rwr import WeightedExample, encode_example, weighted_sft
from genenv.models.sampling import SamplingSettings, encode_prompt
from genenv.models.transformers_backend import TransformersBackend

QUESTIONS = {"France": "Paris", "Japan": "Tokyo"}


def messages(country: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"What is the capital of {country}?"}]


def examples(policy: PolicyPair, weight: float = 1.0) -> list[WeightedExample]:
    return [encode_example(policy.tokenizer, messages(c), a, weight) for c, a in QUESTIONS.items()]


def test_encode_example(policy: PolicyPair) -> None:
    tokenizer = policy.tokenizer
    example = encode_example(tokenizer, messages("France"), "Paris", weight=0.5)
    assert example.prompt_ids == encode_prompt(tokenizer, messages("France"))
    assert example.target_ids == tokenizer("Paris", add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    assert example.weight == 0.5
    short = encode_example(tokenizer, messages("France"), "Paris", max_tokens=12)
    assert len(short.prompt_ids) + len(short.target_ids) == 12
    assert short.prompt_ids == example.prompt_ids[-len(short.prompt_ids) :]
    with pytest.raises(ValueError, match="does not fit"):
        encode_example(tokenizer, messages("France"), "Paris " * 20, max_tokens=8)


def test_sft_learns_the_targets_and_to_stop(policy: PolicyPair) -> None:
    records = weighted_sft(policy, "simulator", examples(policy) * 4, lr=3e-2, kl_coef=0.1, epochs=10)
    assert len(records) == 10
    assert set(records[0]) >= {"step", "loss", "nll", "kl", "n_rows", "seconds"}
    assert records[0]["kl"] == pytest.approx(0.0, abs=1e-7)
    assert records[-1]["nll"] < records[0]["nll"] / 3
    assert records[-1]["kl"] > 0
    completions = TransformersBackend(policy).generate(
        "simulator", [messages(c) for c in QUESTIONS], SamplingSettings(max_new_tokens=8, temperature=0)
    )
    assert [c.text for c in completions] == list(QUESTIONS.values())
    assert all(c.finished for c in completions)
    assert all(c.completion_ids[-1] == policy.tokenizer.eos_token_id for c in completions)


def test_zero_weight_examples_change_nothing(policy: PolicyPair, tiny_model_dir, snapshot, unchanged) -> None:
    before = snapshot(policy, "agent")
    assert weighted_sft(policy, "agent", examples(policy, weight=0.0), lr=1e-2, kl_coef=0.1) == []
    assert unchanged(snapshot(policy, "agent"), before)
    kept = examples(policy)[:1]
    ignored = [WeightedExample(e.prompt_ids, e.target_ids, 0.0) for e in examples(policy)[1:]]
    weighted_sft(policy, "agent", kept, lr=1e-2, kl_coef=0.1, epochs=2)
    with_kept_only = snapshot(policy, "agent")
    fresh = PolicyPair.load(tiny_model_dir, LoraSettings())
    weighted_sft(fresh, "agent", kept + ignored, lr=1e-2, kl_coef=0.1, epochs=2)
    assert unchanged(snapshot(fresh, "agent"), with_kept_only)


def test_weights_scale_the_nll(policy: PolicyPair) -> None:
    """lr 0 leaves the model alone, so each record's nll is a pure function of the batch and its weights."""
    france, japan = examples(policy)
    [alone_france] = weighted_sft(policy, "agent", [france], lr=0.0, kl_coef=0.0)
    [alone_japan] = weighted_sft(policy, "agent", [japan], lr=0.0, kl_coef=0.0)
    assert alone_france["nll"] != pytest.approx(alone_japan["nll"])
    for weight in (1.0, 3.0):
        scaled = WeightedExample(france.prompt_ids, france.target_ids, weight)
        [record] = weighted_sft(policy, "agent", [scaled, japan], lr=0.0, kl_coef=0.0)
        expected = (weight * alone_france["nll"] + alone_japan["nll"]) / (weight + 1)
        assert record["nll"] == pytest.approx(expected, rel=1e-5)


def test_negative_weights_are_rejected(policy: PolicyPair) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        weighted_sft(policy, "agent", examples(policy, weight=-1.0), lr=1e-2, kl_coef=0.0)


def test_kl_is_to_the_reference_adapter(policy: PolicyPair, tiny_model_dir: Path, tmp_path: Path) -> None:
    """Anchored to a copy of the start adapter the KL starts at 0; anchored to the base it would not."""
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B.simulator." in name:
                param.normal_(0.0, 0.5)
    policy.save_adapter("simulator", tmp_path / "simulator")
    folders = {"simulator": tmp_path / "simulator"}
    anchored = PolicyPair.load(tiny_model_dir, LoraSettings(), folders, references=folders)
    unanchored = PolicyPair.load(tiny_model_dir, LoraSettings(), folders)
    [to_copy] = weighted_sft(anchored, "simulator", examples(anchored), lr=1e-2, kl_coef=0.1)
    [to_base] = weighted_sft(unanchored, "simulator", examples(unanchored), lr=1e-2, kl_coef=0.1)
    assert to_copy["kl"] == pytest.approx(0.0, abs=1e-9)
    assert to_base["kl"] > 1e-2


def test_records_carry_entropy_and_persist_is_passed_through(policy: PolicyPair) -> None:
    batch = examples(policy)
    [record] = weighted_sft(policy, "agent", batch, lr=0.0, kl_coef=0.0, persist=False)
    assert "agent" not in policy.optimizer_states
    policy.activate("agent")
    entropy = tokens = 0.0
    for example in batch:
        ids = torch.tensor([example.prompt_ids + example.target_ids])
        with torch.no_grad():
            log_probs = policy.model(ids).logits[0, :-1].log_softmax(-1)[len(example.prompt_ids) - 1 :]
        entropy += -(log_probs.exp() * log_probs).sum().item()
        tokens += len(example.target_ids)
    assert record["entropy"] == pytest.approx(entropy / tokens, rel=1e-5)
    assert record["kl"] is None and record["grad_norm"] > 0
    records = weighted_sft(policy, "agent", batch * 2, lr=1e-2, kl_coef=0.0, batch_size=2, epochs=2)
    assert len(records) == 4
    assert policy.optimizer_states["agent"]["state"][0]["step"].item() == 4


def test_a_step_over_rows_of_different_lengths_has_the_whole_batch_gradient(policy: PolicyPair) -> None:
    """The step is computed in length-sorted micro-batches; its loss and gradient norm are the whole batch's."""
    short = WeightedExample([1, 40], [60, 61], 2.0)
    long = WeightedExample([1, *range(40, 90)], [62, 63, 64, 65], 0.5)
    middle = WeightedExample([1, 41, 42, 43], [66], 1.0)
    batch = [short, long, middle]
    policy.activate("agent")
    with torch.no_grad():
        for param in policy.trainable_parameters():
            param.normal_(0.0, 0.2)
    params = policy.trainable_parameters()
    log_probs, targets, mask = policy.completion_logprobs([e.prompt_ids for e in batch], [e.target_ids for e in batch])
    nll = (-log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * mask).sum(-1) / mask.sum(-1)
    weights = torch.tensor([e.weight for e in batch])
    loss = (weights * nll).sum() / weights.sum()
    grad_norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in torch.autograd.grad(loss, params)]))
    [record] = weighted_sft(policy, "agent", batch, lr=0.0, kl_coef=0.0, max_grad_norm=1e9)
    assert record["nll"] == pytest.approx(loss.item(), rel=1e-5)
    assert record["grad_norm"] == pytest.approx(grad_norm.item(), rel=1e-4)


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_checkpointed_activations_train_exactly_the_same(tiny_model_dir: Path, precision: str) -> None:
    """Recomputing activations in the backward pass saves memory and changes no loss and no weight. (It keeps no
    cache, so rows never share a prompt prefix under it: these prompts share none, so both runs compute alike.)"""
    pairs = [PolicyPair.load(tiny_model_dir, LoraSettings(), precision=precision) for _ in range(2)]
    unshared = [
        WeightedExample([7 + i, *e.prompt_ids[1:]], e.target_ids, e.weight) for i, e in enumerate(examples(pairs[0]))
    ]
    assert pairs[0].shared_prefix([e.prompt_ids for e in unshared]) == 0
    pairs[1].checkpoint_activations = True
    layers = [m for m in pairs[1].model.modules() if isinstance(m, GradientCheckpointingLayer)]
    recompute = []
    layers[0].mlp.register_forward_pre_hook(lambda module, args: recompute.append(torch.is_grad_enabled()))
    records = [weighted_sft(pair, "agent", unshared * 2, lr=3e-2, kl_coef=0.1, epochs=2) for pair in pairs]
    assert [r["loss"] for r in records[0]] == [r["loss"] for r in records[1]]
    weights = [[p.detach() for n, p in pair.model.named_parameters() if "lora_" in n] for pair in pairs]
    assert all(a.equal(b) for a, b in zip(*weights, strict=True))
    assert recompute.count(True) == 2 * len(records[1]), "the layer ran again in each step's backward pass"
    assert layers and not any(m.gradient_checkpointing for m in layers), "off again after training"


def test_epochs_run_one_call_each_train_what_one_call_does(tiny_model_dir: Path, snapshot, unchanged) -> None:
    """The warm start trains an epoch a call (so a stopped one resumes, tasks/warm_start.py): with the AdamW state
    carried and the earlier epochs' shuffles skipped, three calls step through the same batches with the same
    optimizer as one call of three epochs, and the last keeps no AdamW state, as the one call did not."""
    whole, split = (PolicyPair.load(tiny_model_dir, LoraSettings()) for _ in range(2))
    rows = examples(whole) * 3
    settings = {"lr": 1e-2, "kl_coef": 0.0, "batch_size": 4, "seed": 5}
    once = weighted_sft(whole, "agent", rows, epochs=3, persist=False, **settings)
    by_epoch = []
    for epoch in range(3):
        by_epoch += weighted_sft(split, "agent", rows, first_epoch=epoch, keep_optimizer=epoch < 2, **settings)
    assert unchanged(snapshot(split, "agent"), snapshot(whole, "agent"))
    strip = ("seconds",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in by_epoch] == [
        {k: v for k, v in r.items() if k not in strip} for r in once
    ]
    assert "agent" not in split.optimizer_states and "agent" not in whole.optimizer_states
