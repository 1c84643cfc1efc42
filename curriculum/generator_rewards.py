"""Generator (simulator) rewards: a name -> function registry over a batch's success rate p̂.

Each reward is a plain function of p̂ and the config's curriculum parameters, so a new one is one
function and one decorator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from genenv.config import GenEnvConfig
from genenv.registry import Registry

GeneratorReward = Callable[[float, "CurriculumParams"], float]
GENERATOR_REWARDS: Registry[GeneratorReward] = Registry("generator reward")
register_reward = GENERATOR_REWARDS.register


@dataclass(frozen=True)
class CurriculumParams:
    """The config's curriculum fields; their defaults (the paper's) are the config's, written once there."""

    alpha: float = GenEnvConfig.alpha
    beta: float = GenEnvConfig.beta
    k_min: float = GenEnvConfig.k_min
    rwr_lambda: float = GenEnvConfig.rwr_lambda


def success_rate(solved: Sequence[float]) -> float:
    """p̂ = k / n (Eq. 2): the share of the batch's attempts the agent solved.

    `solved` holds one value in [0, 1] per valid variation (its share of solved rollouts), so with
    several rollouts per variation p̂ is graded rather than a multiple of 1/n.
    """
    if not solved:
        raise ValueError("p̂ is undefined for a batch with no valid variation")
    return sum(solved) / len(solved)


@register_reward("alpha_curriculum")
def alpha_curriculum_reward(p_hat: float, params: CurriculumParams) -> float:
    """R_env = exp(-β (p̂ - α)^2)  (Eq. 3): highest when the agent solves about α of the batch."""
    return math.exp(-params.beta * (p_hat - params.alpha) ** 2)


@register_reward("alpha_linear")
def alpha_linear_reward(p_hat: float, params: CurriculumParams) -> float:
    """1 - |p̂ - α| / max(α, 1 - α): falls linearly from 1 at α to 0 at the far end, so an in-band task and an extreme
    one differ by a whole unit (exp(-β(p̂-α)²) with β = 2 separates them by at most 0.39)."""
    return 1.0 - abs(p_hat - params.alpha) / max(params.alpha, 1.0 - params.alpha)


@register_reward("r_zero")
def r_zero_reward(p_hat: float, params: CurriculumParams) -> float:
    """R-Zero's uncertainty reward min(p̂, 1 - p̂), without its repetition penalty."""
    return min(p_hat, 1.0 - p_hat)


@register_reward("absolute_zero")
def absolute_zero_reward(p_hat: float, params: CurriculumParams) -> float:
    """Absolute Zero's learnability: 1 - p̂ when 0 < p̂ < 1, else 0."""
    return 1.0 - p_hat if 0.0 < p_hat < 1.0 else 0.0


def in_band(p_hat: float, params: CurriculumParams) -> bool:
    """Difficulty filter: keep a batch for the simulator update iff |p̂ - α| <= k_min (Alg. 1)."""
    return abs(p_hat - params.alpha) <= params.k_min + 1e-12


def near_band(p_hat: float, alpha: float, margin: float) -> bool:
    """Whether a first p̂ is close enough to α that more rollouts should decide the band: with 8 rollouts the band
    ±0.1 admits only p̂ = 4/8, which a task solved 80% of the time reaches 5% of the time, so easy tasks outnumber the
    target among those admitted unless their p̂ is estimated again."""
    return abs(p_hat - alpha) <= margin + 1e-12


def rwr_weights(rewards: Sequence[float], params: CurriculumParams) -> list[float]:
    """RWR weights w_i ∝ exp(λ R_env,i) (Alg. 1), normalised to mean 1 so the loss scale stays put."""
    if not rewards:
        return []
    raw = [math.exp(params.rwr_lambda * r) for r in rewards]
    mean = sum(raw) / len(raw)
    return [w / mean for w in raw]
