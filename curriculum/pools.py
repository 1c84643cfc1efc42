"""Pool policy: which tasks the agent and the simulator see each generation.

D_train (the agent's pool) grows: seed tasks, then every valid generated task. D_env (the simulator's
training records) grows with every kept batch. Draws are seeded so a generation can be replayed.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from genenv.warehouse.purposes import Purpose

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


def whole_groups(sizes: Mapping[str, int], cap: int, rng: random.Random) -> set[str]:
    """Groups (id -> size) drawn at random and kept whole while their sizes add up to at most `cap` (at least one)."""
    kept: set[str] = set()
    total = 0
    for group in draw(sorted(sizes), len(sizes), rng):
        if kept and total + sizes[group] > cap:
            break
        kept.add(group)
        total += sizes[group]
    return kept


ABSTENTION_TRIES = 20
"""Draws tried per abstention task asked for (a same-family near miss of tool_call works in about 3 draws of 10)."""


def abstention_tasks(
    count: int,
    rng: random.Random,
    builders: Sequence[Callable[[random.Random, int], T | None]],
    key: Callable[[T], str],
) -> list[T]:
    """Up to `count` distinct (by `key`) abstention tasks built by construction, the i-th by builders[i % len(builders)]
    (one per kind, so the kinds come in equal shares). A builder draws what it needs with `rng` and returns None when
    its draw does not work: at most ABSTENTION_TRIES draws per task, so a pool with few workable draws gives fewer
    tasks rather than hanging."""
    built: dict[str, T] = {}
    for index in range(count if builders else 0):
        build = builders[index % len(builders)]
        for _ in range(ABSTENTION_TRIES):
            task = build(rng, index)
            if task is not None and key(task) not in built:
                built[key(task)] = task
                break
    return list(built.values())


EDGE = (0.2, 0.8)
"""The agent's edge: tasks it solves between 20% and 80% of the time, whose GRPO groups most often differ."""
EASY = 0.85
"""A D_train task the agent solved at least this often when last seen is an easy replay."""
EASY_DRAW_WEIGHT = 0.25
"""An easy replay's weight in the draw of D_train (every other task weighs 1): drawn less, never excluded."""


def replay_order(task_ids: Sequence[str], last_success: Mapping[str, float], rng: random.Random) -> list[str]:
    """D_train in the order a generation draws it: a seeded weighted shuffle (Efraimidis and Spirakis: key u^(1/w),
    largest first) in which an easy replay weighs EASY_DRAW_WEIGHT, so pool groups the agent always solves, which carry
    no GRPO signal, stop filling the batch's draws."""

    def weight(task_id: str) -> float:
        return EASY_DRAW_WEIGHT if last_success.get(task_id, 0.0) >= EASY else 1.0

    keys = {task_id: rng.random() ** (1.0 / weight(task_id)) for task_id in task_ids}
    return sorted(task_ids, key=lambda task_id: -keys[task_id])


@dataclass(frozen=True)
class Group:
    """One rolled-out GRPO group: where its task came from, whether the task's answer is to abstain, its rewards."""

    purpose: Purpose
    """FRESH (this generation's simulator task), POOL (a D_train draw) or ABSTENTION (built by construction)."""
    abstains: bool
    rewards: tuple[float, ...]
    success: float | None = None
    """The share of ALL the task's answers this generation that were solved (a fresh task's p̂ rollouts too)."""

    @property
    def at_edge(self) -> bool:
        return self.success is not None and EDGE[0] <= self.success <= EDGE[1]

    @property
    def kind(self) -> str:
        """fresh_call, fresh_abstain, pool_call, pool_abstain or constructed: what the group teaches, from where."""
        if self.purpose == Purpose.ABSTENTION:
            return "constructed"
        return f"{self.purpose}_{'abstain' if self.abstains else 'call'}"

    @property
    def spread(self) -> bool:
        """Its rewards differ: equal rewards carry no GRPO signal."""
        return max(self.rewards) != min(self.rewards)


GROUP_KINDS = ("fresh_call", "fresh_abstain", "pool_call", "pool_abstain", "constructed")


def abstentions_for_share(share: float, calls: int) -> int:
    """Abstaining groups that make `share` of a batch with `calls` other groups: share / (1 - share) x calls, rounded
    to the nearest (half up), so the share holds on average rather than being exceeded in every small batch."""
    return math.floor(share / (1.0 - share) * calls + 0.5)


def select_groups(
    groups: Mapping[str, Group], call_target: int, share: float, rng: random.Random, dense: bool = True
) -> list[str]:
    """The ids of the groups GRPO trains on, sorted. With `dense` (DAPO's dynamic sampling) only groups whose rewards
    differ. Call groups first: fresh ones (at most `call_target`), then pool ones up to `call_target` in all; then
    abstaining groups of any source (fresh, pool or constructed), `abstentions_for_share(share, calls kept)` of them, so
    `share` is the share of the trained groups that teach abstaining, whatever drew them. Where more qualify than fit,
    a seeded draw chooses."""
    fresh, pool, abstaining = _usable(groups, dense)
    if len(fresh) > call_target:  # a fixed agent batch (agent_call_groups) below what the simulator wrote
        fresh = sorted(draw(fresh, call_target, rng))
    calls = fresh + draw(pool, max(call_target - len(fresh), 0), rng)
    return sorted(calls + draw(abstaining, abstentions_for_share(share, len(calls)), rng))


def still_missing(groups: Mapping[str, Group], call_target: int, share: float, dense: bool = True) -> tuple[int, int]:
    """(call groups, abstaining groups) that `select_groups` falls short of a full batch by (`call_target` calls and
    their share of abstentions): what another draw of tasks should fill."""
    fresh, pool, abstaining = _usable(groups, dense)
    calls = min(len(fresh), call_target) + min(len(pool), max(call_target - len(fresh), 0))
    kept_abstaining = min(len(abstaining), abstentions_for_share(share, calls))
    return call_target - calls, max(abstentions_for_share(share, call_target) - kept_abstaining, 0)


def _usable(groups: Mapping[str, Group], dense: bool) -> tuple[list[str], list[str], list[str]]:
    """Ids of the trainable groups (with `dense`, those whose rewards differ), sorted: fresh calls, other calls,
    abstaining."""
    usable = {i: g for i, g in sorted(groups.items()) if g.spread or not dense}
    fresh = [i for i, g in usable.items() if not g.abstains and g.purpose == Purpose.FRESH]
    pool = [i for i, g in usable.items() if not g.abstains and g.purpose != Purpose.FRESH]
    return fresh, pool, [i for i, g in usable.items() if g.abstains]
