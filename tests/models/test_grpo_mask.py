"""GRPO over multi-turn trajectories: the tokens the environment wrote (loss_mask 0) carry no loss."""

from __future__ import annotations

import torch

from genenv.models.grpo import GroupSample, grpo_update
from genenv.models.policy import LoraSettings, PolicyPair

PROMPT = [1, 40, 41, 42, 43, 44]


def trained_adapter(tiny_model_dir, samples: list[GroupSample], snapshot) -> dict[str, torch.Tensor]:
    policy = PolicyPair.load(tiny_model_dir, LoraSettings())
    grpo_update(policy, "agent", samples, lr=1e-2, kl_coef=0.0, minibatch_size=len(samples))
    return snapshot(policy, "agent")


def test_a_masked_last_token_trains_exactly_like_a_completion_without_it(tiny_model_dir, snapshot):
    """Causal attention: the last token never conditions the others, so masking it must equal dropping it, in the
    gradient and in the token count that normalises the loss."""
    completions, rewards = [[60, 70, 80, 90], [61, 71, 81, 91], [62, 72, 82, 92]], [1.0, 0.0, 0.0]
    masked = [GroupSample(PROMPT, c, r, "g", loss_mask=[1, 1, 1, 0]) for c, r in zip(completions, rewards, strict=True)]
    dropped = [GroupSample(PROMPT, c[:-1], r, "g") for c, r in zip(completions, rewards, strict=True)]
    after_masked = trained_adapter(tiny_model_dir, masked, snapshot)
    after_dropped = trained_adapter(tiny_model_dir, dropped, snapshot)
    assert after_masked.keys() == after_dropped.keys()
    assert all(torch.allclose(after_masked[k], after_dropped[k], atol=1e-6) for k in after_masked)
    unmasked = [GroupSample(PROMPT, c, r, "g") for c, r in zip(completions, rewards, strict=True)]
    plain = trained_adapter(tiny_model_dir, unmasked, snapshot)
    assert not all(torch.allclose(after_masked[k], plain[k], atol=1e-6) for k in plain)


def test_an_all_ones_mask_is_the_single_turn_update(tiny_model_dir, snapshot):
    completions, rewards = [[60, 70], [61, 71, 81]], [1.0, 0.0]
    ones = [GroupSample(PROMPT, c, r, "g", loss_mask=[1] * len(c)) for c, r in zip(completions, rewards, strict=True)]
    none = [GroupSample(PROMPT, c, r, "g") for c, r in zip(completions, rewards, strict=True)]
    a, b = trained_adapter(tiny_model_dir, ones, snapshot), trained_adapter(tiny_model_dir, none, snapshot)
    assert all(torch.equal(a[k], b[k]) for k in a)
