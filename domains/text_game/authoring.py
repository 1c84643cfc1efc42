"""The simulator's side of text games: seeds as tasks, the prompt for a variation, and its output parsed and
validated into a winnable game, or rejected with a reason (kept, as every rejection is).

The simulator writes a spec, never game text: TextWorld builds the world, so a task is valid exactly when its
spec compiles to a game whose walkthrough wins in `quest_length` steps.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

from genenv.domains.base import (
    Candidate,
    DifficultyWords,
    Messages,
    TaskInstance,
    ValidationContext,
    difficulty_hint,
)
from genenv.domains.text_game.engine import GAME_REJECT_REASONS, compile_game
from genenv.domains.text_game.spec import LIMITS, SPEC_REJECT_REASONS, GameSpec, SpecRejected

PARSE_REJECT_REASONS = ("empty", "too_long", "truncated", "missing_spec", *SPEC_REJECT_REASONS)
VALIDATE_REJECT_REASONS = (*GAME_REJECT_REASONS, "duplicate", "heldout_overlap")
REJECT_REASONS = PARSE_REJECT_REASONS + VALIDATE_REJECT_REASONS
MAX_RAW_CHARS = 500

SIMULATOR_SYSTEM = (
    "You design text adventure games for an agent to practise on. A game is a JSON object with integer fields: "
    + ", ".join(f'"{name}" ({low}-{high})' for name, (low, high) in LIMITS.items())
    + ". quest_length is how many actions winning takes; more rooms and objects make the goal harder to find. "
    "Answer with the JSON object only."
)
_OBJECT = re.compile(r"\{[^{}]*\}")


def load_seeds() -> list[TaskInstance]:
    text = resources.files("genenv.domains.text_game").joinpath("data/seeds.jsonl").read_text(encoding="utf-8")
    return [_seed_task(json.loads(line)) for line in text.splitlines()]


def _seed_task(row: dict) -> TaskInstance:
    spec = GameSpec.from_dict(row["spec"])
    return _task(row["seed_id"], spec, row["objective"], row["walkthrough"])


def _task(task_id: str, spec: GameSpec, objective: str, walkthrough: list[str] | tuple[str, ...]) -> TaskInstance:
    return TaskInstance(
        task_id=task_id,
        spec={"game": json.loads(spec.to_json()), "objective": objective},
        answer="\n".join(walkthrough),
        family=f"game-{spec.key}",  # every world is its own: held-out seeds spread over every difficulty
    )


DIFFICULTY = DifficultyWords(
    tasks="games",
    solves="wins",
    harder="Make the new game harder: a longer quest, or more rooms and distracting objects.",
    easier="Make the new game easier: a shorter quest, fewer rooms and objects.",
)


def simulator_messages(seed: TaskInstance, success_rate: float | None, alpha: float, k_min: float) -> Messages:
    user = (
        f"Example game: {json.dumps(seed.spec['game'], sort_keys=True)}\n"
        f"{difficulty_hint(success_rate, alpha, k_min, DIFFICULTY)}\n"
        "Write ONE new game that differs from the example (another seed gives another world)."
    )
    return [{"role": "system", "content": SIMULATOR_SYSTEM}, {"role": "user", "content": user}]


def simulator_target(task: TaskInstance) -> str:
    return json.dumps(task.spec["game"], sort_keys=True)


def parse_candidate(raw: str, task_id: str, truncated: bool) -> Candidate:
    """The spec the simulator wrote (the first JSON object in its output), or a rejection with its reason."""
    if not raw.strip():
        return Candidate(raw=raw, task=None, reject_reason="empty")
    if len(raw) > MAX_RAW_CHARS:
        return Candidate(raw=raw, task=None, reject_reason="too_long")
    found = _OBJECT.search(raw)
    if found is None:
        return Candidate(raw=raw, task=None, reject_reason="truncated" if truncated else "missing_spec")
    try:
        spec = GameSpec.from_json(found.group(0))
    except SpecRejected as error:
        return Candidate(raw=raw, task=None, reject_reason=error.reason)
    return Candidate(raw=raw, task=_task(task_id, spec, objective="", walkthrough=()))


def validate(candidate: Candidate, context: ValidationContext, games_dir: Path) -> Candidate:
    """Compile the spec and replay its walkthrough; the task then carries the game's objective and walkthrough."""
    if candidate.task is None:
        return candidate
    spec = GameSpec.from_dict(candidate.task.spec["game"])
    if spec.key in context.heldout_calls:
        return Candidate(candidate.raw, candidate.task, "heldout_overlap")
    if spec.key in context.seen_keys:
        return Candidate(candidate.raw, candidate.task, "duplicate")
    try:
        game = compile_game(spec, games_dir)
    except SpecRejected as rejected:
        return Candidate(candidate.raw, candidate.task, rejected.reason)
    return Candidate(candidate.raw, _task(candidate.task.task_id, spec, game.objective, game.walkthrough))


def dedup_key(task: TaskInstance) -> str:
    """Two tasks are the same game when their specs are equal."""
    return GameSpec.from_dict(task.spec["game"]).key


answer_key = dedup_key
"""A generated game equal to a held-out seed's game would train on that held-out item."""
