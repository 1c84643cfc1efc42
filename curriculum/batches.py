"""Score one generation's simulator outputs: p̂, R_env, band membership and RWR weights per reward unit.

The unit is a seed's batch of n variations (reward_scope="batch", Eq. 2 read literally) or one generated task with
its k rollouts (reward_scope="task", the batch read as one task's group, as the official GenEnv code scores it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from genenv.curriculum.generator_rewards import GENERATOR_REWARDS, CurriculumParams, in_band, rwr_weights, success_rate


@dataclass(frozen=True)
class BatchOutcome:
    """What the agent did with one seed's n variations."""

    batch_id: str
    seed_task_id: str
    n_variations: int
    variation_success: Sequence[float]
    """One entry per VALID variation: the share of its k rollouts that were solved."""


@dataclass(frozen=True)
class TaskOutcome:
    """What the agent did with one simulator output."""

    task_id: str
    batch_id: str
    seed_task_id: str
    success: float | None
    """The share of its k rollouts that were solved; None for an output the domain rejected (never rolled out)."""


@dataclass(frozen=True)
class BatchScore:
    batch_id: str
    seed_task_id: str
    task_id: str | None
    """The task this unit is (reward_scope="task"); None when the unit is the whole seed batch."""
    n_variations: int
    n_valid: int
    p_hat: float | None
    generator_reward: float
    in_band: bool
    rwr_weight: float
    """0 for units outside the band: they stay out of D_env."""


def score_batches(outcomes: Sequence[BatchOutcome], reward_name: str, params: CurriculumParams) -> list[BatchScore]:
    """p̂ (Eq. 2) and R_env (Eq. 3) per seed batch; band filter; RWR weights over the kept batches.

    A batch with no valid variation has no p̂: it earns R_env = 0 and is never kept.
    """
    reward_fn = GENERATOR_REWARDS[reward_name]
    units = []
    for o in outcomes:
        p_hat = success_rate(o.variation_success) if o.variation_success else None
        reward = 0.0 if p_hat is None else reward_fn(p_hat, params)
        units.append(
            _unit(o.batch_id, o.seed_task_id, None, o.n_variations, len(o.variation_success), p_hat, reward, params)
        )
    return _weighted(units, params)


def score_tasks(
    outcomes: Sequence[TaskOutcome], reward_name: str, params: CurriculumParams, invalid_reward: float
) -> list[BatchScore]:
    """p̂ (Eq. 2) over each task's own k rollouts and R_env (Eq. 3) per task; band filter and RWR weights per task.

    An invalid output has no p̂ and earns `invalid_reward` (R-Zero's -1): the simulator's GRPO update then counts
    it against the simulator instead of leaving it out. It is never kept for D_env.
    """
    reward_fn = GENERATOR_REWARDS[reward_name]
    units = []
    for o in outcomes:
        reward = invalid_reward if o.success is None else reward_fn(o.success, params)
        units.append(
            _unit(o.batch_id, o.seed_task_id, o.task_id, 1, int(o.success is not None), o.success, reward, params)
        )
    return _weighted(units, params)


def _unit(
    batch_id: str,
    seed_task_id: str,
    task_id: str | None,
    n_variations: int,
    n_valid: int,
    p_hat: float | None,
    reward: float,
    params: CurriculumParams,
) -> BatchScore:
    """A scored unit, kept iff it has a p̂ with |p̂ - α| <= k_min (Alg. 1); its weight comes from `_weighted`."""
    kept = p_hat is not None and in_band(p_hat, params)
    return BatchScore(batch_id, seed_task_id, task_id, n_variations, n_valid, p_hat, reward, kept, 0.0)


def _weighted(units: list[BatchScore], params: CurriculumParams) -> list[BatchScore]:
    """RWR weights w ∝ exp(λ R_env) among the kept units."""
    weights = iter(rwr_weights([u.generator_reward for u in units if u.in_band], params))
    return [replace(u, rwr_weight=next(weights)) if u.in_band else u for u in units]


def simulator_advantages(
    groups: Sequence[str], rewards: Sequence[float | None], invalid_advantage: float, eps: float = 1e-4
) -> list[float]:
    """The simulator's GRPO advantages, validity apart from difficulty: within each group (one seed's variations) a
    valid output's (R_env - mean) / (std + eps) over the group's valid outputs only (sample std, as TRL's; 0 where they
    are equal or alone), and `invalid_advantage` for a rejected output (reward None). Normalised over all outputs
    together, validity would set the advantages: with half the outputs rejected at -1, 93% of their squared sum."""
    valid: dict[str, list[float]] = defaultdict(list)
    for group, reward in zip(groups, rewards, strict=True):
        if reward is not None:
            valid[group].append(reward)
    stats = {}
    for group, values in valid.items():
        mean = sum(values) / len(values)
        equal = max(values) == min(values)
        stats[group] = (mean, 0.0 if equal else math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)))
    advantages = []
    for group, reward in zip(groups, rewards, strict=True):
        if reward is None:
            advantages.append(invalid_advantage)
            continue
        mean, std = stats[group]
        advantages.append(0.0 if std == 0.0 else (reward - mean) / (std + eps))
    return advantages
