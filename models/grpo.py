"""GRPO on stored rollouts as TRL runs it: group-normalised advantages, the PPO-clipped token loss with
TRL's "dapo" normalisation, and a k3 KL penalty to the role's reference adapter (its generation-0 adapter): TRL
1.16's GRPOTrainer loss with use_bias_correction_kl=False, checked on a stored batch by
tests/models/test_grpo_trl_parity.py (loss and LoRA gradients, every intended difference listed there)."""

from __future__ import annotations

import math
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from genenv.models.data_parallel import added_across_ranks, my_rows, rank_and_world
from genenv.models.memory import return_freed_memory
from genenv.models.policy import PolicyPair


@dataclass(frozen=True)
class GroupSample:
    prompt_ids: list[int]
    completion_ids: list[int]
    reward: float
    group: str
    loss_mask: list[int] | None = None
    """1 on the completion tokens the policy wrote, 0 on those the environment did (a multi-turn episode's
    observations): only the former carry loss. None: every completion token is the policy's."""

    @property
    def learned(self) -> list[int]:
        """`loss_mask`, or 1 on every completion token when there is none."""
        return [1] * len(self.completion_ids) if self.loss_mask is None else list(self.loss_mask)

    @property
    def learned_tokens(self) -> int:
        return sum(self.learned)


@dataclass
class _Row:
    """A sample the update computes, with its per-token log-probs from before the first step: a row of the first
    step has none until that step's own forward (`_micro_batch_loss`) records them."""

    sample: GroupSample
    advantage: float
    old_logp: torch.Tensor | None
    ref_logp: torch.Tensor | None


@dataclass(frozen=True)
class _LossSettings:
    """How a step's rows are computed: the KL and clip coefficients, the sampling temperature of the log-probs, and
    the micro-batch size."""

    kl_coef: float
    clip_epsilon: float
    temperature: float
    micro_batch_size: int


def group_advantages(samples: Sequence[GroupSample], eps: float = 1e-4) -> list[float]:
    """(r - mean_g) / (std_g + eps) with the sample std (as TRL's torch.std); equal rewards or singletons -> 0.

    Equal rewards are detected exactly: a rounding-error advantage would still get a full-size Adam step.
    """
    stats = {}
    for group, values in _group_rewards(samples).items():
        mean = sum(values) / len(values)
        spread = sum((v - mean) ** 2 for v in values)
        std = 0.0 if max(values) == min(values) else math.sqrt(spread / (len(values) - 1))
        stats[group] = (mean, std)
    advantages = []
    for sample in samples:
        mean, std = stats[sample.group]
        advantages.append(0.0 if std == 0.0 else (sample.reward - mean) / (std + eps))
    return advantages


def zero_spread_share(samples: Sequence[GroupSample]) -> float:
    """Share of groups whose rewards are all equal (singletons included): they carry no GRPO signal."""
    groups = list(_group_rewards(samples).values())
    return sum(max(v) == min(v) for v in groups) / len(groups) if groups else 0.0


def grpo_update(
    policy: PolicyPair,
    role: str,
    samples: Sequence[GroupSample],
    *,
    lr: float,
    kl_coef: float,
    epochs: int = 1,
    minibatch_size: int = 16,
    micro_batch_size: int = 8,
    clip_epsilon: float = 0.2,
    max_grad_norm: float = 1.0,
    seed: int = 0,
    temperature: float = 1.0,
    advantages: Sequence[float] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[dict]:
    """`epochs` passes over `samples`, each shuffled with random.Random(seed + epoch) and cut into minibatches
    of `minibatch_size` rows: one optimizer step, one record and one `progress(1)` per minibatch.

    Loss per completion token (TRL's GRPO, loss_type="dapo"): the PPO clipped surrogate
    -min(r A, clip(r, 1 - eps, 1 + eps) A) with r = exp(logp - logp_old), plus kl_coef * k3(logp, logp_ref);
    summed over the minibatch's completion tokens and divided by their number. logp_old (and logp_ref) come
    from one no-grad pass before the first step, so r measures how far this call's earlier steps moved the
    policy; the first step's own rows are on-policy, so their logp_old is their logp in that step, detached, and
    the no-grad pass skips them (TRL does the same when it can). Log-probabilities are those of the sampling
    distribution at `temperature` (logits / T). `advantages`, one per sample, replace the group-normalised ones
    (the simulator's: normalised among valid outputs only).
    """
    advantages = group_advantages(samples) if advantages is None else list(advantages)
    zero_spread = zero_spread_share(samples)
    # Nothing to train on is still one (skipped) step on record: the stage's log says the update ran.
    plan = _minibatches(len(samples), minibatch_size, epochs, seed) or [[]]
    # Without a KL term a zero-advantage row contributes exactly nothing: never forward it.
    live = [i for i, s in enumerate(samples) if s.completion_ids and (kl_coef != 0.0 or advantages[i] != 0.0)]
    if not live or all(a == 0.0 for a in advantages):  # no learning signal: weights and optimizer untouched
        return _reported([_skipped(step, len(minibatch), zero_spread) for step, minibatch in enumerate(plan)], progress)
    records: list[dict] = []
    loss = _LossSettings(kl_coef, clip_epsilon, temperature, micro_batch_size)
    rank, world = rank_and_world()  # data parallel (models/data_parallel.py): this rank's rows, all ranks' gradients
    with policy.training(role, lr) as (optimizer, params):
        rows = _rows(policy, role, samples, advantages, my_rows(live, rank, world), loss, set(plan[0]))
        for step, minibatch in enumerate(plan):
            if set(live).intersection(minibatch):
                # dapo: the minibatch's completion tokens, trained or skipped, normalise its loss
                tokens = sum(samples[i].learned_tokens for i in minibatch)
                started = time.perf_counter()
                optimizer.zero_grad(set_to_none=True)
                trained = [rows[i] for i in minibatch if i in rows]
                sums = _backward(policy, trained, tokens, loss)
                sums = _summed_across_ranks(params, sums)
                grad_norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm).item()
                optimizer.step()
                record = _step_record(step, len(minibatch), sums, tokens, loss, started, grad_norm, zero_spread)
            else:
                record = _skipped(step, len(minibatch), zero_spread)
            records += _reported([record], progress)
    return records


def _backward(policy: PolicyPair, trained: Sequence[_Row], tokens: int, loss: _LossSettings) -> dict[str, float]:
    """Backward of one step's loss over the rows this rank computes, divided by the step's `tokens`; returns their
    summed token statistics. The rows run in length-sorted micro-batches of about `loss.micro_batch_size`
    median-length rows' tokens (`PolicyPair.micro_batches`), so little of the work is padding; the loss is a sum, so
    the cut does not change it."""
    # Every rank sums the same statistics, those of rows it did not compute at 0, to add them up.
    sums: dict[str, float] = defaultdict(float, dict.fromkeys(_STATS + (("kl",) if loss.kl_coef else ()), 0.0))
    lengths = [_length(r.sample) for r in trained]
    prompts = [r.sample.prompt_ids for r in trained]
    for indices in policy.micro_batches(prompts, lengths, loss.micro_batch_size) if trained else []:
        micro_batch = [trained[i] for i in indices]
        # Micro-batches of other lengths leave the C heap fragmented: handing its free pages back first keeps the
        # stage's peak near one micro-batch's activations (docs/performance.md).
        return_freed_memory()
        summed, stats = _micro_batch_loss(policy, micro_batch, loss.kl_coef, loss.clip_epsilon, loss.temperature)
        (summed / tokens).backward()
        for key, value in stats.items():
            sums[key] += value
    return sums


def _summed_across_ranks(params: list[torch.nn.Parameter], sums: dict[str, float]) -> dict[str, float]:
    """The step's gradients and statistics added over the data-parallel ranks (one rank: as they are)."""
    return defaultdict(float, added_across_ranks(params, sums))


def _step_record(
    step: int,
    n_rows: int,
    sums: dict[str, float],
    tokens: int,
    loss: _LossSettings,
    started: float,
    grad_norm: float,
    zero_spread: float,
) -> dict:
    """One optimizer step on record: its loss per minibatch token, and token means (kl, clip_ratio, entropy,
    approx_kl) over the rows the step computed."""
    computed = sums["tokens"]
    return {
        "step": step,
        "loss": sums["loss"] / tokens,
        "kl": sums["kl"] / computed if loss.kl_coef != 0.0 else None,
        "n_rows": n_rows,
        "seconds": time.perf_counter() - started,
        "grad_norm": grad_norm,
        "clip_ratio": sums["clipped"] / computed,
        "entropy": sums["entropy"] / computed,
        "approx_kl": sums["approx_kl"] / computed,
        "zero_spread_share": zero_spread,
        "skipped": False,
    }


def _reported(records: list[dict], progress: Callable[[int], None] | None) -> list[dict]:
    """`records`, each counted as one step done by `progress`."""
    if progress is not None:
        for _ in records:
            progress(1)
    return records


_STATS = ("loss", "tokens", "clipped", "entropy", "approx_kl")
"""The token statistics `_micro_batch_loss` sums (and "kl" with a KL term)."""


def _minibatches(n_rows: int, size: int, epochs: int, seed: int) -> list[list[int]]:
    """Row indices of each planned step: every epoch shuffles all rows with random.Random(seed + epoch)."""
    plan = []
    for epoch in range(epochs):
        order = list(range(n_rows))
        random.Random(seed + epoch).shuffle(order)
        plan += [order[start : start + size] for start in range(0, n_rows, size)]
    return plan


def _rows(
    policy: PolicyPair,
    role: str,
    samples: Sequence[GroupSample],
    advantages: Sequence[float],
    live: Sequence[int],
    loss: _LossSettings,
    first_step: set[int],
) -> dict[int, _Row]:
    """The rows to train on, keyed by sample index, with logp_old (and logp_ref) from no-grad passes; the rows of
    `first_step` get their logp_old from that step instead."""
    batch = [samples[i] for i in live]
    later = [k for k, i in enumerate(live) if i not in first_step]
    old: list[torch.Tensor | None] = [None] * len(batch)
    for k, value in zip(
        later, _logprobs(policy, [batch[k] for k in later], loss.micro_batch_size, loss.temperature), strict=True
    ):
        old[k] = value
    ref: Sequence[torch.Tensor | None] = [None] * len(batch)
    if loss.kl_coef != 0.0:
        with policy.reference(role):
            ref = _logprobs(policy, batch, loss.micro_batch_size, loss.temperature)
    return {i: _Row(samples[i], advantages[i], o, r) for i, o, r in zip(live, old, ref, strict=True)}


def _logprobs(
    policy: PolicyPair, samples: Sequence[GroupSample], micro_batch_size: int, temperature: float
) -> list[torch.Tensor]:
    """Each sample's completion-token log-probs under the current forward path, without gradient."""
    out: list[torch.Tensor] = [torch.empty(0)] * len(samples)
    if not samples:  # a data-parallel rank may own none of the rows
        return out
    with torch.no_grad():
        lengths = [_length(s) for s in samples]
        for indices in policy.micro_batches([s.prompt_ids for s in samples], lengths, micro_batch_size):
            batch = [samples[i] for i in indices]
            logp, _, mask = policy.completion_token_logprobs(
                [s.prompt_ids for s in batch], [s.completion_ids for s in batch], temperature
            )
            values = logp[mask].split([len(s.completion_ids) for s in batch])
            for i, value in zip(indices, values, strict=True):
                out[i] = value
    return out


def _length(sample: GroupSample) -> int:
    return len(sample.prompt_ids) + len(sample.completion_ids)


def _micro_batch_loss(
    policy: PolicyPair, batch: Sequence[_Row], kl_coef: float, eps: float, temperature: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """Summed (not averaged) per-token loss of one micro-batch, and its summed token statistics."""
    logp, entropy, mask = policy.completion_token_logprobs(
        [r.sample.prompt_ids for r in batch], [r.sample.completion_ids for r in batch], temperature
    )
    logp = _padded_to_zero(logp, mask)
    current = logp.detach()[mask].split([len(r.sample.completion_ids) for r in batch])
    olds = []
    for row, values in zip(batch, current, strict=True):
        if row.old_logp is None:  # a first-step row: on-policy, its logp_old is this forward's logp
            row.old_logp = values
        olds.append(row.old_logp)
    old_logp = _placed(olds, mask)
    learned = (
        _placed([torch.tensor(r.sample.learned, dtype=torch.float32, device=mask.device) for r in batch], mask) > 0
    )
    advantage = torch.tensor([r.advantage for r in batch], dtype=logp.dtype, device=logp.device).unsqueeze(-1)
    ratio = torch.exp(logp - old_logp)
    # PPO's clipped surrogate (as TRL's GRPO): the pessimistic of the unclipped and the clipped objective.
    per_token = -torch.min(ratio * advantage, torch.clamp(ratio, 1 - eps, 1 + eps) * advantage)
    stats = {}
    if kl_coef != 0.0:
        delta = _placed([_reference(r) for r in batch], mask) - logp
        kl = torch.exp(delta) - delta - 1  # k3 estimate of KL(pi || pi_ref)
        per_token = per_token + kl_coef * kl
        stats["kl"] = (kl * learned).sum().item()
    loss = (per_token * learned).sum()
    with torch.no_grad():
        clipped = ((ratio < 1 - eps) & (advantage < 0)) | ((ratio > 1 + eps) & (advantage > 0))
        moved = old_logp - logp
        approx_kl = torch.exp(moved) - moved - 1  # k3 of the current policy to the pre-update one
        stats |= {
            "loss": loss.item(),
            "tokens": learned.sum().item(),
            "clipped": (clipped & learned).sum().item(),
            "entropy": (entropy * learned).sum().item(),
            "approx_kl": (approx_kl * learned).sum().item(),
        }
    return loss, stats


def _padded_to_zero(logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Log-prob of each completion token [B, C]; 0 at padding, so no padded value can overflow an exp."""
    return logp.masked_fill(~mask, 0.0)


def _reference(row: _Row) -> torch.Tensor:
    """The row's log-probs under the reference adapter, computed for every row when there is a KL term."""
    if row.ref_logp is None:
        raise ValueError("a row has no reference log-probs: they are computed only with a KL term")
    return row.ref_logp


def _placed(values: Sequence[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    """Per-row token values laid out where `mask` marks each row's completion tokens; 0 at padding."""
    out = torch.zeros(mask.shape, device=mask.device)
    out[mask] = torch.cat(list(values))
    return out


def _group_rewards(samples: Sequence[GroupSample]) -> dict[str, list[float]]:
    rewards: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        rewards[sample.group].append(sample.reward)
    return rewards


def _skipped(step: int, n_rows: int, zero_spread: float) -> dict:
    """A planned step without a learning signal: reported, but weights and optimizer are left alone."""
    return {
        "step": step,
        "loss": 0.0,
        "kl": None,
        "n_rows": n_rows,
        "seconds": 0.0,
        "grad_norm": 0.0,
        "clip_ratio": 0.0,
        "entropy": None,
        "approx_kl": 0.0,
        "zero_spread_share": zero_spread,
        "skipped": True,
    }
