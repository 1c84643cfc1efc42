"""What the finetune stage does between two stages that generate, for tests of engines that serve published
adapters: move the agent's adapter, save both roles, publish them, and tell the runtime."""

from __future__ import annotations

from pathlib import Path

import torch

from genenv.models.policy import ROLES, PolicyPair
from genenv.runtime.handle import ModelRuntime
from genenv.warehouse.checkpoints import publish_adapter


def moved_and_published(runtime: ModelRuntime, policy: PolicyPair, folder: Path) -> tuple[str, ...]:
    """Set the agent's lora_B to seeded noise large enough that its greedy answers surely differ from the base
    model's, publish both adapters under `folder`, and return their checkpoints."""
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B" in name and ".agent." in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.3)
    checkpoints = tuple(str(folder / "published" / role) for role in ROLES)
    for role, uri in zip(ROLES, checkpoints, strict=True):
        policy.save_adapter(role, folder / "staging" / role)
        publish_adapter(folder / "staging" / role, uri)
    runtime.saved(checkpoints)
    return checkpoints
