"""Pool policy: which tasks the agent and the simulator see each generation.

D_train (the agent's pool) grows: seed tasks, then every valid generated task. D_env (the simulator's
training records) grows with every kept batch. Draws are seeded so a generation can be replayed.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def is_heldout(family: str, fraction: float) -> bool:
    """A stable, seed-independent split by task family: every seed of a held-out family is held out, in every
    run and generation, so neither model ever trains on (or is prompted with) a sibling of a held-out task."""
    digest = hashlib.sha256(family.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def generation_rng(seed: int, generation: int, purpose: str) -> random.Random:
    """One independent random stream per (run seed, generation, purpose)."""
    return random.Random(f"{seed}/{generation}/{purpose}")


def draw(items: Sequence[T], count: int, rng: random.Random) -> list[T]:
    """Sample without replacement, or everything (shuffled) when asked for more than there is."""
    return rng.sample(list(items), min(count, len(items)))


def grow_pool(pool: Sequence[str], fresh_valid: Sequence[str]) -> list[str]:
    """D_train ∪= Valid(E_t): keeps order, never drops or duplicates a task."""
    seen = set(pool)
    grown = list(pool)
    for task_id in fresh_valid:
        if task_id not in seen:
            seen.add(task_id)
            grown.append(task_id)
    return grown
