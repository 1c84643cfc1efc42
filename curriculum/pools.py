"""Pool policy: which tasks the agent and the simulator see each generation.

D_train (the agent's pool) grows: seed tasks, then every valid generated task. D_env (the simulator's
training records) grows with every kept batch. Draws are seeded so a generation can be replayed.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")


def is_heldout(family: str, fraction: float) -> bool:
    """A stable, seed-independent split by task family: every seed of a held-out family is held out, in every
    run and generation, so neither model ever trains on (or is prompted with) a sibling of a held-out task."""
    digest = hashlib.sha256(family.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def generation_rng(run_seed: int, generation: int, purpose: str) -> random.Random:
    """One independent random stream per (run seed, generation, purpose)."""
    return random.Random(f"{run_seed}/{generation}/{purpose}")


def sampling_seed(run_seed: int, generation: int, role: str) -> int:
    """The seed of a generation's sampled calls of `role` (the simulator writing, the agent's rollouts): the
    formulas every stored run was made with, so resumed and re-run generations draw the same tokens."""
    return run_seed * 100_003 + generation + {"simulator": 0, "agent": 7}[role]


def update_seed(run_seed: int, generation: int) -> int:
    """The seed of a generation's updates (minibatch order, dropout) for both roles."""
    return run_seed + generation


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


ABSTENTION_TRIES = 20
"""Random pairs tried per abstention task asked for (83% of pairs of shipped tool_call seeds qualify)."""


def abstention_tasks(
    pool: Sequence[T], count: int, rng: random.Random, make: Callable[[T, T, int], T | None], key: Callable[[T], str]
) -> list[T]:
    """Up to `count` distinct (by `key`) abstention tasks built by construction: `make(offered, request, index)` puts
    one pool task's request to another's means, or returns None when those could serve it. Tries random pairs, at
    most ABSTENTION_TRIES per task asked for, so a pool with few workable pairs gives fewer rather than hanging."""
    built: dict[str, T] = {}
    for _ in range(ABSTENTION_TRIES * count):
        if len(built) == count or len(pool) < 2:
            break
        offered, request = rng.sample(list(pool), 2)
        task = make(offered, request, len(built))
        if task is not None and key(task) not in built:
            built[key(task)] = task
    return list(built.values())


def intended_abstentions(share: float, other_groups: int) -> int:
    """Abstention groups that make (at least) `share` of a batch whose other groups number `other_groups`: rounded
    up, so a small batch still holds one."""
    return math.ceil(share / (1.0 - share) * other_groups - 1e-9)


def dense_groups(
    groups: Mapping[str, tuple[str, Sequence[float]]], caps: Mapping[str, int | None], rng: random.Random
) -> list[str]:
    """DAPO's dynamic sampling: the ids of the groups whose rewards differ (equal rewards carry no GRPO signal), at
    most caps[purpose] of each purpose (None: all), drawn at random where there are more. `groups` maps a group id
    to (purpose, rewards)."""
    spread: dict[str, list[str]] = {}
    for group_id in sorted(groups):
        purpose, rewards = groups[group_id]
        if max(rewards) != min(rewards):
            spread.setdefault(purpose, []).append(group_id)
    kept = []
    for purpose, ids in spread.items():
        cap = caps.get(purpose)
        kept += ids if cap is None or len(ids) <= cap else rng.sample(ids, cap)
    return sorted(kept)
