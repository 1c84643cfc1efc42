"""The GenEnv paper's comparison arms (its ablations) as config presets, not code forks.

Each arm is a set of overrides on one shared config, so arms compared together share seeds, n, k and
the agent's sample budget per generation. A new arm is one entry here.
"""

from __future__ import annotations

from collections.abc import Sequence
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


GENERATION_ZERO_NEUTRAL = frozenset(
    {
        "run_name",
        "generations",
        "simulator_training",
        "static_tasks",
        # what generations 1..T draw and roll out: generation 0 (seed set, warm start, greedy held-out) reads none
        "seeds_per_generation",
        "variations_per_seed",
        "simulator_seed_draw",
        "simulator_max_new_tokens",
        "simulator_temperature",
        "simulator_top_p",
        "rollouts_per_task",
        "p_hat_rollouts",
        "p_hat_confirm_rollouts",
        "p_hat_confirm_margin",
        "pool_tasks_per_generation",
        "d_train_needs_agreement",
        "agent_call_groups",
        "agent_temperature",
        "agent_top_p",
        "abstention_share",
        "dynamic_sampling",
        "dynamic_sampling_draws",
        "probe_tasks",
        # generation 0's held-out verdicts record it, but their `solved`, all it measures, does not depend on it
        "agent_wrong_call_reward",
        # the updates of generations 1..T: the warm start has its own fields
        "agent_lr",
        "agent_kl_coef",
        "agent_replay_rows",
        "agent_epochs",
        "agent_minibatch_size",
        "agent_clip_epsilon",
        "generator_reward",
        "reward_scope",
        "beta",
        "rwr_lambda",
        "simulator_update",
        "simulator_invalid_advantage",
        "simulator_lr",
        "simulator_kl_coef",
        "simulator_epochs",
        "simulator_minibatch_size",
        "simulator_clip_epsilon",
        "simulator_max_records",
        "simulator_pool_rescore",
        "simulator_min_records",
    }
)
"""Fields generation 0 (seed set, warm start, held-out measure) never reads: arms that differ only in these share one
generation 0 (`genenv compare` runs it once and forks the other arms from it, or forks them all from `--from-run`)."""

TRAIN, GENERATION_ZERO, BASE = "train", "generation-0", "base"


def arm_role(config: GenEnvConfig) -> str:
    """train: runs generations 1..T; generation-0: is generation 0 (the warm start); base: the model, no adapter."""
    if config.generations >= 1:
        return TRAIN
    return GENERATION_ZERO if config.warm_start else BASE


def generation_zero_differences(first: GenEnvConfig, second: GenEnvConfig) -> list[str]:
    """The fields that make the two configs' generation 0 differ (empty: they can share it).

    The seed is not one of them: generation 0 reads it, but a run forked from a generation 0 draws the randomness of
    generations 1..T from its own seed, which is how `compare --seeds` runs each arm several times from one warm start.
    """
    a, b = first.to_dict(), second.to_dict()
    return sorted(name for name in a if name not in {*GENERATION_ZERO_NEUTRAL, "seed"} and a[name] != b[name])


@dataclass(frozen=True)
class ArmPlan:
    arm: str
    role: str
    """genenv.arms.TRAIN, GENERATION_ZERO or BASE."""
    overrides: dict[str, str]
    """The arm's preset on top of the shared overrides."""
    config: GenEnvConfig
    label: str
    """The arm, or 'arm sN' for seed N of a comparison over several seeds."""


def plan_arms(
    arms: list[str], config_file: str | None, overrides: dict[str, Any] | None, seeds: Sequence[int] | None = None
) -> list[ArmPlan]:
    """Every arm's config from the shared config, a training arm once per seed of `seeds` (default: the config's);
    refuses arms that could not share generation 0."""
    if not arms:
        raise ConfigError("arms: empty list")
    if len(set(arms)) != len(arms):
        raise ConfigError(f"arms: an arm is named twice ({','.join(arms)})")
    if seeds is not None and (not seeds or len(set(seeds)) != len(seeds)):
        raise ConfigError(f"seeds: need distinct seeds (got {list(seeds)})")
    plans = []
    for arm in arms:
        preset = arm_overrides(arm)
        config = load_config(config_file, {**(overrides or {}), **preset})
        role = arm_role(config)
        arm_seeds = list(seeds) if role == TRAIN and seeds is not None else [config.seed]
        several = len(arm_seeds) > 1
        for seed in arm_seeds:
            run_name = f"{config.run_name}-{arm}" + (f"-s{seed}" if several else "")
            label = f"{arm} s{seed}" if several else arm
            plans.append(ArmPlan(arm, role, preset, config.replace(seed=seed, run_name=run_name), label))
    sharing = [plan for plan in plans if plan.role != BASE]
    for plan in sharing[1:]:
        differences = generation_zero_differences(sharing[0].config, plan.config)
        if differences:
            raise ConfigError(
                f"arms: {plan.arm} changes {differences}, which generation 0 depends on; the arms compared share "
                f"one generation 0 (that of {sharing[0].arm})"
            )
    return plans
