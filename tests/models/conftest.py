"""Fixtures for the model-layer tests: a fresh adapter pair on the tiny model, and weight snapshots."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from genenv.models.policy import LoraSettings, PolicyPair

Snapshot = dict[str, torch.Tensor]


@pytest.fixture
def policy(tiny_model_dir: Path) -> PolicyPair:
    return PolicyPair.load(tiny_model_dir, LoraSettings())


@pytest.fixture
def snapshot() -> Callable[[PolicyPair, str | None], Snapshot]:
    """snapshot(policy, role) copies that adapter's LoRA weights; role None copies the base weights."""

    def take(policy: PolicyPair, role: str | None) -> Snapshot:
        def wanted(name: str) -> bool:
            return "lora_" not in name if role is None else "lora_" in name and f".{role}." in name

        return {n: p.detach().clone() for n, p in policy.model.named_parameters() if wanted(n)}

    return take


def same(a: Snapshot, b: Snapshot) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture
def unchanged() -> Callable[[Snapshot, Snapshot], bool]:
    return same
