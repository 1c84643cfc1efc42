"""The paper's comparison arms as config presets, not code forks (PAPER.md, ablations).

Each arm is a set of overrides on one shared config, so arms compared together share seeds, n, k and
the agent's sample budget per generation. A new arm is one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from genenv.config import ConfigError, GenEnvConfig, load_config

ARMS: dict[str, dict[str, str]] = {
    "genenv": {},
    "genenv-random": {"simulator_training": "false"},
    "static": {"simulator_training": "false", "static_tasks": "true"},
    "warm-start-only": {"generations": "0"},
    "base": {"warm_start": "false", "generations": "0"},
}
"""genenv: the method. genenv-random: the simulator stays frozen after the warm start. static: the frozen
simulator writes one task set (generation 1) that every generation reuses. warm-start-only: generation 0
only. base: the untrained model (no warm start, no generation)."""


def arm_of(config: GenEnvConfig) -> str:
    """The arm a config is: the most specific preset that changes nothing in it (genenv when none other fits)."""
    fitting = [arm for arm, preset in ARMS.items() if load_config(None, preset, base=config) == config]
    return max(fitting, key=lambda arm: len(ARMS[arm]))


def arm_overrides(arm: str) -> dict[str, str]:
    try:
        return dict(ARMS[arm])
    except KeyError:
        raise ConfigError(f"arms: unknown arm {arm!r}; known: {sorted(ARMS)}") from None


GENERATION_ZERO_NEUTRAL = frozenset({"run_name", "generations", "simulator_training", "static_tasks"})
"""Fields generation 0 (seed set, warm start, held-out measure) never reads: arms that differ only in these share one
generation 0 (`genenv compare` runs it once and forks the other arms from it)."""

TRAIN, GENERATION_ZERO, BASE = "train", "generation-0", "base"


def arm_role(config: GenEnvConfig) -> str:
    """train: runs generations 1..T; generation-0: is generation 0 (the warm start); base: the model, no adapter."""
    if config.generations >= 1:
        return TRAIN
    return GENERATION_ZERO if config.warm_start else BASE


def generation_zero_differences(first: GenEnvConfig, second: GenEnvConfig) -> list[str]:
    """The fields that make the two configs' generation 0 differ (empty: they can share it)."""
    a, b = first.to_dict(), second.to_dict()
    return sorted(name for name in a if name not in GENERATION_ZERO_NEUTRAL and a[name] != b[name])


@dataclass(frozen=True)
class ArmPlan:
    arm: str
    role: str
    """genenv.arms.TRAIN, GENERATION_ZERO or BASE."""
    overrides: dict[str, str]
    """The arm's preset on top of the shared overrides."""
    config: GenEnvConfig


def plan_arms(arms: list[str], config_file: str | None, overrides: dict[str, Any] | None) -> list[ArmPlan]:
    """Every arm's config from the shared config; refuses arms that could not share generation 0."""
    if not arms:
        raise ConfigError("arms: empty list")
    if len(set(arms)) != len(arms):
        raise ConfigError(f"arms: an arm is named twice ({','.join(arms)})")
    plans = []
    for arm in arms:
        preset = arm_overrides(arm)
        config = load_config(config_file, {**(overrides or {}), **preset})
        config = config.replace(run_name=f"{config.run_name}-{arm}")
        plans.append(ArmPlan(arm, arm_role(config), preset, config))
    sharing = [plan for plan in plans if plan.role != BASE]
    for plan in sharing[1:]:
        differences = generation_zero_differences(sharing[0].config, plan.config)
        if differences:
            raise ConfigError(
                f"arms: {plan.arm} changes {differences}, which generation 0 depends on; the arms compared share "
                f"one generation 0 (that of {sharing[0].arm})"
            )
    return plans
