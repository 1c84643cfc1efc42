"""The memory plan applied where a policy trains: on a GPU, a config that cannot fit the device is refused before the
model loads, and activation checkpointing is switched on when the train phase fits only with it."""

from __future__ import annotations

from pathlib import Path

import torch

from genenv.models.memory_plan import Architecture, PlanSettings, check_plan, memory_plan


def planned_checkpointing(settings: PlanSettings, model: str, base: Path) -> bool:
    """Whether the trainer recomputes activations: on a GPU the plan for this device decides (and refuses, naming
    the phase, what cannot fit); elsewhere the config's `checkpoint_activations`."""
    if not torch.cuda.is_available():
        return settings.checkpointing
    card = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    plan = memory_plan(Architecture.of(model, base), settings, card)
    check_plan(plan)
    return plan.checkpoints_activations
