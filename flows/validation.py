"""The checks of a config that need the registries: its domain, generator reward and backend must exist and be
usable here. Run once at each entry point (the CLI's commands and the flows), before any model loads; the config
itself stays data, checking only what its values alone decide (genenv/config.py)."""

from __future__ import annotations

from genenv.config import GenEnvConfig, require
from genenv.curriculum.generator_rewards import GENERATOR_REWARDS
from genenv.domains.base import DOMAINS, DomainUnavailable, MultiTurnDomain
from genenv.models.backends import BACKENDS


def validate(config: GenEnvConfig) -> GenEnvConfig:
    """`config`, when every name it chooses is registered and can run here; else ConfigError naming the field."""

    def need(ok: bool, name: str, why: str) -> None:
        require(config, ok, name, why)

    need(
        config.generator_reward in GENERATOR_REWARDS,
        "generator_reward",
        f"must be one of {GENERATOR_REWARDS.names()}",
    )
    need(config.domain in DOMAINS, "domain", f"must be one of {DOMAINS.names()}{DOMAINS.how_to_add}")
    try:
        domain = DOMAINS.get(config.domain)(config)
    except DomainUnavailable as missing:
        need(False, "domain", str(missing))
    need(
        not (config.ray_address and isinstance(domain, MultiTurnDomain)),
        "ray_address",
        f"rollout workers answer in one turn; {config.domain} is played turn by turn, in the flow's process only "
        "(docs/scale.md)",
    )
    need(config.backend in BACKENDS, "backend", f"must be one of {BACKENDS.names()}")
    if config.backend == "vllm":
        from genenv.models.vllm import unavailable

        problem = unavailable()
        need(problem is None, "backend", f"{problem}")
    return config
