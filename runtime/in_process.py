"""Generation (the transformers backend) and training in the flow's own process, on one policy."""

from __future__ import annotations

from typing import Any

from genenv.config import GenEnvConfig, Placement
from genenv.models.backends import BACKENDS
from genenv.models.loading import resolve_base_model
from genenv.models.memory_plan import PlanSettings
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.sampling import GenerationBackend
from genenv.runtime.checkpoints import NO_CHECKPOINTS, Checkpoints, adapter_cache
from genenv.runtime.device_plan import planned_checkpointing
from genenv.runtime.interface import Update
from genenv.runtime.slot import PolicySlot, PolicySpec


def policy_spec(config: GenEnvConfig) -> PolicySpec:
    return PolicySpec(
        resolve_base_model(config.model, config.models_dir), LoraSettings.of(config), config.seed, config.precision
    )


class InProcessRuntime:
    """The flow's process holds the policy: loaded by the first stage, moved between checkpoints by adapter swaps.
    A stage that trains marks it trained first, so a crash mid-update never lets a later stage reuse half-trained
    weights."""

    def __init__(self, placement: Placement | None = None) -> None:
        self.placement = placement
        self.slot = PolicySlot()

    def policy(self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints) -> PolicyPair:
        """The pair with `checkpoints` as adapters and `references` as each role's frozen KL reference."""
        spec = policy_spec(config)
        checkpointing = planned_checkpointing(PlanSettings.of(config), config.model, spec.base)  # before a load
        policy = self.slot.as_of(spec, checkpoints, references, adapter_cache(config))
        policy.checkpoint_activations = checkpointing  # changes memory and time, not results
        return policy

    def backend(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> GenerationBackend:
        policy = self.policy(config, checkpoints, references)
        return BACKENDS[config.backend](policy, batch_size=config.generation_batch_size)

    def training(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> PolicyPair:
        policy = self.policy(config, checkpoints, references)
        self.slot.trained()
        return policy

    def fit(self, policy: PolicyPair, update: Update, role: str, rows: list, **settings: Any) -> list[dict]:
        return update(policy, role, rows, **settings)

    def saved(self, checkpoints: Checkpoints) -> None:
        self.slot.saved(checkpoints)

    def release(self) -> None:
        self.slot.release()
