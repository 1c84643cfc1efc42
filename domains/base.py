"""What a domain is: a family of tasks the simulator varies and the agent solves.

A domain owns everything that depends on the task format: the seed set, the prompts both models see,
parsing and validating simulator output, and verifying agent answers (R_agent, Eq. 1).
Nothing here imports torch or Prefect, so domains test in milliseconds.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from genenv.config import GenEnvConfig
from genenv.registry import Registry

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class TaskInstance:
    """One task the agent can attempt: a seed from the shipped set or a variation written by the simulator."""

    task_id: str
    spec: dict[str, Any]
    """Domain payload, JSON-serialisable (for tool_call: {"functions": [...], "question": "..."})."""
    answer: str
    """Reference answer in the agent's output format (for tool_call: '[f(a=1)]')."""
    family: str = ""
    """Seeds of one family are siblings (for tool_call: the sorted function names)."""

    @property
    def question(self) -> str | None:
        """The request put to the agent, for the `tasks` table's `question` column; None where the domain's tasks
        have none (text_game: a game, not a request)."""
        question = self.spec.get("question")
        return None if question is None else str(question)


REPEAT = "repeat"
"""The reject reason of a valid output identical to one written earlier in the same generation: kept out of the
pools, it shares that output's verdict in the simulator's reward (a "duplicate" repeats an earlier generation's)."""


@dataclass(frozen=True)
class Candidate:
    """The simulator's output for one variation, parsed or rejected. Rejections are data, kept with a reason."""

    raw: str
    task: TaskInstance | None
    reject_reason: str | None = None

    @property
    def valid(self) -> bool:
        return self.task is not None and self.reject_reason is None


@dataclass(frozen=True)
class Verdict:
    """R_agent for one agent answer (Eq. 1) and what the verifier understood of it."""

    reward: float
    parsed_action: str | None
    parse_error: str | None = None
    turns: tuple[dict[str, Any], ...] = ()
    """Multi-turn domains: one row per turn as the verifier replayed it (the `turns` table, without ids)."""


@dataclass
class ValidationContext:
    """What a candidate is checked against besides its own schema."""

    seen_keys: set[str] = field(default_factory=set)
    """Dedup keys of every task already in the pool or in this generation."""
    is_contaminated: Callable[[str], bool] = lambda text: False
    """True when text overlaps the evaluation benchmarks."""
    heldout_calls: set[str] = field(default_factory=set)
    """`Domain.answer_key` of every held-out seed: a generated task with the same answer would train on a held-out
    item in other words. An answer without calls (abstention) never counts as overlap."""


@dataclass(frozen=True)
class DifficultyWords:
    """How a domain names its tasks and the ways to make one harder or easier, for `difficulty_hint`."""

    tasks: str
    """The tasks, plural: "tasks", "games"."""
    solves: str
    """What the agent does to one: "solves", "wins"."""
    harder: str
    easier: str


def difficulty_hint(success_rate: float | None, alpha: float, k_min: float, words: DifficultyWords) -> str:
    """The α-Curriculum band (the GenEnv paper, Eqs. 2-3) in the simulator's prompt: harder above alpha + k_min, easier
    below alpha - k_min, the same inside; steers the simulator towards the agent's zone of proximal development."""
    if success_rate is None:
        return f"The agent's current success rate on {words.tasks} like this is unknown. Keep a similar difficulty."
    rate = f"The agent currently {words.solves} {round(100 * success_rate)}% of {words.tasks} like this."
    if success_rate > alpha + k_min:
        return f"{rate} {words.harder}"
    if success_rate < alpha - k_min:
        return f"{rate} {words.easier}"
    return rate + " Keep a similar difficulty."


class DomainUnavailable(RuntimeError):
    """The domain needs a package that is not installed; the message says how to install it."""


class Domain(Protocol):
    name: str

    def load_seeds(self) -> list[TaskInstance]: ...

    def agent_messages(self, task: TaskInstance) -> Messages: ...

    def simulator_messages(
        self, seed: TaskInstance, success_rate: float | None, alpha: float = 0.5, k_min: float = 0.1
    ) -> Messages:
        """The simulator's prompt for a variation of `seed`, asking for harder tasks when the agent's success rate
        is above alpha + k_min and easier ones below alpha - k_min (the alpha-Curriculum band)."""
        ...

    def simulator_target(self, task: TaskInstance) -> str:
        """The completion the simulator should write for `task` (warm start and RWR targets)."""
        ...

    def parse_candidate(self, raw: str, seed: TaskInstance, task_id: str, truncated: bool) -> Candidate: ...

    def validate(self, candidate: Candidate, context: ValidationContext) -> Candidate: ...

    def dedup_key(self, task: TaskInstance) -> str: ...

    def sibling_key(self, task: TaskInstance) -> str:
        """Seeds with equal keys are variations of each other: the simulator's warm start pairs them."""
        ...

    def answer_key(self, task: TaskInstance) -> str:
        """The task's answer in canonical form, for ValidationContext.heldout_calls."""
        ...

    def verify(self, output: str, task: TaskInstance) -> Verdict: ...

    def demonstrations(self, task: TaskInstance) -> list[tuple[Messages, str]]:
        """(agent prompt, reply) pairs that solve `task`: the agent's warm-start examples (one per turn)."""
        ...

    def difficulty(self, task: TaskInstance) -> float:
        """A cheap estimate that grows with how hard `task` is (for tool_call: the calls and argument values its
        answer needs): the simulator's warm start shows the success rate whose hint fits a seed -> sibling pair."""
        ...

    def benchmark_texts(self, benchmarks_dir: str) -> Iterable[str]:
        """Texts from evaluation data that generated or seed tasks must not overlap: the seed and generate stages
        decontaminate against these (none where the domain has no evaluation benchmark)."""
        ...

    def benchmark_sets(self, benchmarks_dir: str) -> dict[str, str | None]:
        """Each evaluation set `benchmark_texts` reads, mapped to None when present or to a line saying why it is
        not read (not installed, no folder given): the run's log says what its tasks were checked against."""
        ...


class Episode(Protocol):
    """A multi-turn task in play: the agent's prompt is `messages()`, its reply goes to `step` until `done`."""

    @property
    def done(self) -> bool: ...

    @property
    def ended_by_game(self) -> bool:
        """Done because the task ended (a win or a loss), not because the turn budget ran out."""
        ...

    def messages(self) -> Messages: ...

    def step(self, reply: str) -> None: ...

    def transcript(self) -> str:
        """What the agent did, as text `Domain.verify` scores (the trajectory's `completion`)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class MultiTurnDomain(Domain, Protocol):
    """A domain whose tasks are played turn by turn; `agent_messages` is then the first turn's prompt."""

    def start_episode(self, task: TaskInstance) -> Episode: ...


AbstentionBuilder = Callable[[random.Random, str], "tuple[TaskInstance, str] | None"]
"""Draws what it needs with the generator and returns an abstention task with the given id and the id of the task
whose means it offers, or None when its draw does not work."""


@runtime_checkable
class DescribedDifficulty(Domain, Protocol):
    """A domain that says what makes its tasks harder part by part (tool_call: calls, arguments, optional ones,
    distractors, values to infer); its `difficulty` is their sum, and each generation's metrics keep every part."""

    def difficulty_parts(self, task: TaskInstance) -> dict[str, float]: ...


@runtime_checkable
class AbstainingDomain(Domain, Protocol):
    """A domain where the right answer can be to do nothing (tool_call: `[]` when no offered function fits), which
    the agent unlearns unless the curriculum keeps asking for it: abstention tasks are then built by construction."""

    def is_abstention(self, task: TaskInstance) -> bool: ...

    def abstains(self, output: str) -> bool:
        """The agent's answer `output` does nothing (tool_call: it decodes as no call): on a task that asks for an
        action, the abstention the curriculum must not teach too far."""
        ...

    def abstention_task(self, offered: TaskInstance, request: TaskInstance, task_id: str) -> TaskInstance | None:
        """`request`'s request put to `offered`'s unrelated means (for tool_call, its functions), answered by
        abstaining; None when those means could serve the request, or `request` is an abstention itself."""
        ...

    def abstention_builders(self, pool: Sequence[TaskInstance]) -> dict[str, AbstentionBuilder]:
        """One builder per kind of abstention task the domain makes from `pool` (D_train), asked in turn, so the agent
        meets near misses too (for tool_call: a function of the same family, a request that lacks a required value)."""
        ...


DOMAINS: Registry[Callable[[GenEnvConfig], Domain]] = Registry(
    "domain", group="genenv.domains", guide="docs/domains.md"
)
"""Domain factories (taking the run's config) by name: every entry point in the group `genenv.domains` of an
installed package, the built-ins included (pyproject.toml), so a package adds a domain without an edit here."""
register_domain = DOMAINS.register
"""Decorator: `@register_domain("name")` on a Domain factory registers it in this process only (tests, notebooks)."""


def get_domain(name: str, config: GenEnvConfig | None = None) -> Domain:
    """The domain `name`, set up from `config` (its episode budget, its cache folder), or from the defaults."""
    return DOMAINS.get(name)(config or GenEnvConfig())
