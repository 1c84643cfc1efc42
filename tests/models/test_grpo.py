from __future__ import annotations

import math

import pytest
import torch

from models.grpo import GroupSample, group_advantages, grpo_update
from models.policy import PolicyPair

PROMPT_A = [1, 40, 41, 42, 43, 44]
PROMPT_B = [1, 50, 51]


def samples(rewards_a: list[float], rewards_b: list[float]) -> list[GroupSample]:
    rows = [GroupSample(PROMPT_A, [60 + i, 70 + i, 80], r, "a") for i, r in enumerate(rewards_a)]
    rows += [GroupSample(PROMPT_B, [90 + i] * (i + 1), r, "b") for i, r in enumerate(rewards_b)]
    return rows


def completion_logp(policy: PolicyPair, sample: GroupSample) -> float:
    """Straightforward unbatched sum of log-probs of the completion tokens."""
    ids = torch.tensor([sample.prompt_ids + sample.completion_ids])
    with torch.no_grad():
        log_probs = policy.model(ids).logits[0, :-1].log_softmax(-1)
    start = len(sample.prompt_ids) - 1
    return sum(log_probs[start + j, t].item() for j, t in enumerate(sample.completion_ids))


def test_group_advantages_exact() -> None:
    rows = samples([1.0, 0.0, 0.0, 1.0], [0.5, 0.5]) + [GroupSample([1], [2], 3.0, "solo")]
    std = math.sqrt(1 / 3)
    expected = [0.5 / (std + 1e-4), -0.5 / (std + 1e-4)] * 2
    assert group_advantages(rows)[:4] == pytest.approx([expected[0], expected[1], expected[1], expected[0]])
    assert group_advantages(rows)[4:] == [0.0, 0.0, 0.0]
    assert group_advantages(samples([2.0, 0.0, 1.0], []), eps=0.0) == pytest.approx([1.0, -1.0, 0.0])


def test_update_changes_only_the_active_adapter(policy: PolicyPair, snapshot, unchanged) -> None:
    before = {role: snapshot(policy, role) for role in (None, "agent", "simulator")}
    records = grpo_update(
        policy, "agent", samples([1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.5]), lr=1e-2, kl_coef=0.1, micro_batch_size=3
    )
    assert len(records) == 1
    assert set(records[0]) == {"step", "loss", "kl", "n_rows", "seconds", "grad_norm"}
    assert records[0]["n_rows"] == 7
    assert math.isfinite(records[0]["loss"]) and records[0]["grad_norm"] > 0
    assert records[0]["kl"] == pytest.approx(0.0, abs=1e-7)
    assert not unchanged(snapshot(policy, "agent"), before["agent"])
    assert unchanged(snapshot(policy, "simulator"), before["simulator"])
    assert unchanged(snapshot(policy, None), before[None])


def test_all_zero_advantages_skip(policy: PolicyPair, snapshot, unchanged) -> None:
    before = snapshot(policy, "agent")
    calls: list[int] = []
    records = grpo_update(
        policy, "agent", samples([1.0, 1.0], [0.0, 0.0]), lr=1e-2, kl_coef=0.1, steps=2, progress=calls.append
    )
    assert [r["skipped"] for r in records] == [True, True]
    assert [r["loss"] for r in records] == [0.0, 0.0]
    assert calls == [1, 1]
    assert unchanged(snapshot(policy, "agent"), before)


def test_loss_is_token_level_normalised(policy: PolicyPair) -> None:
    rows = samples([1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.5])
    advantages = group_advantages(rows)
    tokens = sum(len(r.completion_ids) for r in rows)
    expected = -sum(a * len(r.completion_ids) for a, r in zip(advantages, rows, strict=True)) / tokens
    [record] = grpo_update(policy, "agent", rows, lr=1e-3, kl_coef=0.0, micro_batch_size=2)
    assert record["loss"] == pytest.approx(expected, abs=1e-6)
    assert record["kl"] == 0.0


def test_gradient_matches_unbatched_logprobs(policy: PolicyPair) -> None:
    """The batched, left-padded loss must have the gradient of -sum_i A_i logp_i / tokens computed row by row."""
    rows = samples([1.0, 0.0], [1.0, 0.0, 0.5])
    advantages = group_advantages(rows)
    tokens = sum(len(r.completion_ids) for r in rows)
    policy.activate("agent")
    params = policy.trainable_parameters()
    with torch.no_grad():
        for p in params:
            p.normal_(0.0, 0.3)
    loss = torch.zeros(())
    for advantage, row in zip(advantages, rows, strict=True):
        ids = torch.tensor([row.prompt_ids + row.completion_ids])
        log_probs = policy.model(ids).logits[0, :-1].log_softmax(-1)[len(row.prompt_ids) - 1 :]
        logp = log_probs.gather(-1, torch.tensor(row.completion_ids).unsqueeze(-1)).sum()
        loss = loss - advantage * logp / tokens
    expected = torch.autograd.grad(loss, params)
    captured: dict[int, torch.Tensor] = {}
    hooks = [p.register_hook(lambda g, i=i: captured.setdefault(i, g.clone())) for i, p in enumerate(params)]
    grpo_update(policy, "agent", rows, lr=0.0, kl_coef=0.0, micro_batch_size=len(rows), max_grad_norm=1e9)
    for hook in hooks:
        hook.remove()
    assert sorted(captured) == list(range(len(params)))
    for i, want in enumerate(expected):
        assert torch.allclose(captured[i], want, atol=1e-6, rtol=1e-4)


def test_updates_move_probability_toward_rewarded_completions(policy: PolicyPair) -> None:
    rows = samples([1.0, 0.0, 1.0, 0.0], [])
    before = [completion_logp(policy, r) for r in rows]
    records = grpo_update(policy, "agent", rows, lr=1e-2, kl_coef=0.05, steps=5)
    policy.activate("agent")
    after = [completion_logp(policy, r) for r in rows]
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4]
    assert records[0]["kl"] == pytest.approx(0.0, abs=1e-7)
    assert records[-1]["kl"] > 1e-4
    gains = [a - b for a, b in zip(after, before, strict=True)]
    assert min(gains[0], gains[2]) > 0 > max(gains[1], gains[3])
