"""Move a loaded policy to other adapters without loading the base model again.

A policy is loaded once per process (a flow's, a Ray worker's); between stages only its adapters change: each
role's LoRA weights and AdamW state, and its frozen KL reference. Swapping them is a few MB, where a reload is the
whole base model (15 GB for a 7B one in bf16) and, beside a vLLM engine, room the engine needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors.torch import load_file

from genenv.models.policy import OPTIMIZER_FILE, ROLES, PolicyPair, reference_name

ADAPTER_WEIGHTS = "adapter_model.safetensors"


def swap_adapters(
    policy: PolicyPair,
    adapters: Mapping[str, Path | None],
    references: Mapping[str, Path | None] | None,
    fresh: Mapping[str, Mapping[str, torch.Tensor]],
) -> None:
    """Give `policy` what `PolicyPair.load(..., adapters=adapters, references=references)` would: each role the
    weights and AdamW state of its folder, or `fresh[role]` (its weights as freshly loaded, no AdamW state) for None;
    each role with a reference folder that frozen adapter, and none for None (`references` None: keep them)."""
    for role in ROLES:
        folder = adapters.get(role)
        if folder is None:
            policy.load_adapter_state(role, fresh[role], None)
        else:
            policy.load_adapter_state(role, saved_weights(policy, role, Path(folder)), saved_optimizer(Path(folder)))
    for role in ROLES if references is not None else ():
        _set_reference(policy, role, references.get(role))
    policy.activate(ROLES[0])


def saved_weights(policy: PolicyPair, role: str, folder: Path) -> dict[str, torch.Tensor]:
    """The adapter saved in `folder`, keyed by `role`'s parameter names in `policy` (PEFT saves them without the
    adapter's name: `...q_proj.lora_A.weight` for `...q_proj.lora_A.agent.weight`)."""
    saved = load_file(folder / ADAPTER_WEIGHTS)
    pattern = re.compile(rf"\.(lora_\w+)\.{re.escape(role)}\.")
    params = {n: p for n, p in policy.model.named_parameters() if pattern.search(n)}
    keys = {n: pattern.sub(r".\1.", n) for n in params}
    fits = len(params) == len(saved) and all(k in saved and saved[k].shape == params[n].shape for n, k in keys.items())
    if not fits:
        raise ValueError(f"the adapter in {folder} does not fit this policy's {role} adapter (LoRA rank or targets)")
    return {n: saved[k] for n, k in keys.items()}


def saved_optimizer(folder: Path) -> dict | None:
    """The AdamW state saved beside an adapter, or None."""
    path = folder / OPTIMIZER_FILE
    return torch.load(path, map_location="cpu", weights_only=True) if path.is_file() else None


def _set_reference(policy: PolicyPair, role: str, folder: Path | None) -> None:
    """`role`'s frozen KL reference becomes the adapter in `folder`; None removes it (the base is the anchor)."""
    name = reference_name(role)
    held = name in policy.model.peft_config
    if folder is None:
        if held:
            policy.model.delete_adapter(name)
        return
    if not held:
        policy.model.load_adapter(folder, adapter_name=name, is_trainable=False)
        return
    weights = saved_weights(policy, name, Path(folder))
    with torch.no_grad():
        for param_name, param in policy.model.named_parameters():
            if param_name in weights:
                param.copy_(weights[param_name])
