"""One policy per process, kept across stages: loaded once per base model and settings, then moved between
checkpoints by swapping adapters (models/adapters.py), never by loading the base model again."""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path

import torch

from genenv.models.adapters import swap_adapters
from genenv.models.memory import release_device_memory
from genenv.models.policy import ROLES, LoraSettings, PolicyPair
from genenv.runtime.checkpoints import NO_CHECKPOINTS, Checkpoints, local_adapters


@dataclass(frozen=True)
class PolicySpec:
    """What a loaded policy is built from; another spec means another load."""

    base: Path
    lora: LoraSettings
    seed: int
    precision: str


class PolicySlot:
    """The process's policy, the checkpoints its adapters equal (`adapters`; None once it trained since) and its KL
    references (`references`)."""

    def __init__(self) -> None:
        self.policy: PolicyPair | None = None
        self.spec: PolicySpec | None = None
        self.adapters: Checkpoints | None = None
        self.references: Checkpoints = NO_CHECKPOINTS
        self.version = 0
        """Bumped whenever the weights may change: what an engine keys its merged weights and LoRA ids by."""
        self.loads = 0
        """Whole-policy loads so far (the base model read and placed); swaps are not counted."""
        self.swaps = 0
        self._fresh: dict[str, dict[str, torch.Tensor]] = {}

    def needs_load(self, spec: PolicySpec) -> bool:
        return self.policy is None or self.spec != spec

    def as_of(
        self, spec: PolicySpec, checkpoints: Checkpoints, references: Checkpoints | None, cache: Path
    ) -> PolicyPair:
        """The policy with `checkpoints` as adapters and `references` as KL references (None: whichever it holds;
        generation never reads them): as it is when it holds them, else with its adapters swapped, else (another
        spec, or a fresh adapter it cannot restore) loaded."""
        load = self.needs_load(spec)
        wanted = references if references is not None else (NO_CHECKPOINTS if load else self.references)
        if not load and self.adapters == checkpoints and self.references == wanted:
            return self.held
        adapters, frozen = local_adapters(checkpoints, cache), local_adapters(wanted, cache)
        if load or any(adapters[role] is None and role not in self._fresh for role in ROLES):
            self._load(spec, adapters, frozen)
        else:
            swap_adapters(self.held, adapters, frozen if wanted != self.references else None, self._fresh)
            self.swaps += 1
        self.adapters, self.references = checkpoints, wanted
        self.version += 1
        return self.held

    @property
    def held(self) -> PolicyPair:
        """The policy this slot holds; asked for only once one is loaded."""
        if self.policy is None:
            raise RuntimeError("no policy is loaded in this slot")
        return self.policy

    def _load(self, spec: PolicySpec, adapters: dict[str, Path | None], references: dict[str, Path | None]) -> None:
        """The old copy goes before the new one loads, not after."""
        self.release()
        self.policy = PolicyPair.load(
            spec.base, spec.lora, adapters=adapters, references=references, seed=spec.seed, precision=spec.precision
        )
        self.spec = spec
        self.loads += 1
        self._fresh = {role: self.policy.adapter_state(role) for role in ROLES if adapters[role] is None}

    def trained(self) -> None:
        """The adapters are about to change in place: they match no checkpoint until `saved`."""
        self.adapters = None
        self.version += 1

    def saved(self, checkpoints: Checkpoints) -> None:
        """The trained adapters were saved as `checkpoints`."""
        if self.policy is not None:
            self.adapters = checkpoints

    def release(self) -> None:
        self.policy = self.spec = self.adapters = None
        self.references = NO_CHECKPOINTS
        self._fresh = {}
        gc.collect()
        release_device_memory()
