"""Score one generation's seed batches: p̂, R_env, band membership and RWR weights."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from genenv.curriculum.rewards import GENERATOR_REWARDS, CurriculumParams, in_band, rwr_weights, success_rate


@dataclass(frozen=True)
class BatchOutcome:
    """What the agent did with one seed's n variations."""

    batch_id: str
    seed_task_id: str
    n_variations: int
    variation_success: Sequence[float]
    """One entry per VALID variation: the share of its k rollouts that were solved."""


@dataclass(frozen=True)
class BatchScore:
    batch_id: str
    seed_task_id: str
    n_variations: int
    n_valid: int
    p_hat: float | None
    generator_reward: float
    in_band: bool
    rwr_weight: float
    """0 for batches outside the band: they stay out of the simulator's update."""


def score_batches(outcomes: Sequence[BatchOutcome], reward_name: str, params: CurriculumParams) -> list[BatchScore]:
    """p̂ (Eq. 2) and R_env (Eq. 3) per batch; band filter; RWR weights over the kept batches.

    A batch with no valid variation has no p̂: it earns R_env = 0 and is never kept.
    """
    reward_fn = GENERATOR_REWARDS[reward_name]
    partial = []
    for o in outcomes:
        if o.variation_success:
            p_hat = success_rate(o.variation_success)
            partial.append((o, p_hat, reward_fn(p_hat, params), in_band(p_hat, params)))
        else:
            partial.append((o, None, 0.0, False))
    kept_rewards = [r for _, _, r, kept in partial if kept]
    weights = iter(rwr_weights(kept_rewards, params))
    return [
        BatchScore(
            batch_id=o.batch_id,
            seed_task_id=o.seed_task_id,
            n_variations=o.n_variations,
            n_valid=len(o.variation_success),
            p_hat=p_hat,
            generator_reward=reward,
            in_band=kept,
            rwr_weight=next(weights) if kept else 0.0,
        )
        for o, p_hat, reward, kept in partial
    ]
