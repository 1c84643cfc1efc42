"""GRPO on stored rollouts: group-normalised advantages, token-level loss, k3 KL to the adapter-free base."""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from models.policy import PolicyPair


@dataclass(frozen=True)
class GroupSample:
    prompt_ids: list[int]
    completion_ids: list[int]
    reward: float
    group: str


def group_advantages(samples: Sequence[GroupSample], eps: float = 1e-4) -> list[float]:
    """(r - mean_g) / (std_g + eps) with the sample std (as TRL's torch.std); equal rewards or singletons -> 0."""
    rewards: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        rewards[sample.group].append(sample.reward)
    stats = {}
    for group, values in rewards.items():
        mean = sum(values) / len(values)
        spread = sum((v - mean) ** 2 for v in values)
        std = math.sqrt(spread / (len(values) - 1)) if len(values) > 1 else 0.0
        stats[group] = (mean, std)
    advantages = []
    for sample in samples:
        mean, std = stats[sample.group]
        advantages.append(0.0 if std == 0.0 else (sample.reward - mean) / (std + eps))
    return advantages


def grpo_update(
    policy: PolicyPair,
    role: str,
    samples: Sequence[GroupSample],
    *,
    lr: float,
    kl_coef: float,
    micro_batch_size: int = 8,
    steps: int = 1,
    max_grad_norm: float = 1.0,
    progress: Callable[[int], None] | None = None,
) -> list[dict]:
    """`steps` optimizer steps on the stored token ids, one record each; `progress(1)` after each step.

    Loss (TRL's "dapo", one on-policy iteration): sum over all completion tokens of
    -exp(logp - logp.detach()) * A + kl_coef * k3(logp, logp_ref), divided by the batch's completion tokens.
    """
    advantages = group_advantages(samples)
    total_tokens = sum(len(s.completion_ids) for s in samples)
    if total_tokens == 0 or all(a == 0.0 for a in advantages):
        return [_skipped(step, len(samples), progress) for step in range(steps)]
    # Without a KL term a zero-advantage row contributes exactly nothing: skip its forward pass.
    rows = [i for i, a in enumerate(advantages) if kl_coef != 0.0 or a != 0.0]
    records = []
    with policy.training(role, lr) as (optimizer, params):
        for step in range(steps):
            started = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss_sum = kl_sum = 0.0
            for start in range(0, len(rows), micro_batch_size):
                batch = [samples[i] for i in rows[start : start + micro_batch_size]]
                if not any(s.completion_ids for s in batch):
                    continue
                batch_advantages = [advantages[i] for i in rows[start : start + micro_batch_size]]
                loss, kl = _micro_batch_loss(policy, batch, batch_advantages, kl_coef)
                (loss / total_tokens).backward()
                loss_sum += loss.item()
                kl_sum += kl
            grad_norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm).item()
            optimizer.step()
            records.append(
                {
                    "step": step,
                    "loss": loss_sum / total_tokens,
                    "kl": kl_sum / total_tokens,
                    "n_rows": len(samples),
                    "seconds": time.perf_counter() - started,
                    "grad_norm": grad_norm,
                }
            )
            if progress is not None:
                progress(1)
    return records


def _micro_batch_loss(
    policy: PolicyPair, batch: Sequence[GroupSample], advantages: Sequence[float], kl_coef: float
) -> tuple[torch.Tensor, float]:
    """Summed (not averaged) per-token loss of one micro-batch, and its summed KL for logging."""
    prompts = [s.prompt_ids for s in batch]
    completions = [s.completion_ids for s in batch]
    log_probs, targets, mask = policy.completion_logprobs(prompts, completions)
    logp = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    advantage = torch.tensor(advantages, dtype=logp.dtype, device=logp.device).unsqueeze(-1)
    per_token = -torch.exp(logp - logp.detach()) * advantage
    kl_total = 0.0
    if kl_coef != 0.0:
        with torch.no_grad(), policy.reference():
            ref_log_probs, _, _ = policy.completion_logprobs(prompts, completions)
            ref_logp = ref_log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        delta = ref_logp - logp
        kl = torch.exp(delta) - delta - 1
        per_token = per_token + kl_coef * kl
        kl_total = (kl * mask).sum().item()
    return (per_token * mask).sum(), kl_total


def _skipped(step: int, n_rows: int, progress: Callable[[int], None] | None) -> dict:
    """No learning signal (all advantages 0): report the step without touching the weights or the optimizer."""
    if progress is not None:
        progress(1)
    return {"step": step, "loss": 0.0, "kl": 0.0, "n_rows": n_rows, "seconds": 0.0, "grad_norm": 0.0, "skipped": True}
