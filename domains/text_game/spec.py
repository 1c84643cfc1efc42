"""A text game as a task: the few numbers TextWorld builds a whole game from, checked before anything compiles.

A spec such as `{"rooms": 3, "objects": 6, "quest_length": 4, "seed": 7}` gives the same game in every process.
Difficulty moves mainly with the quest length, then with distractor objects and the size of the world.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from typing import Any

LIMITS: dict[str, tuple[int, int]] = {
    "rooms": (1, 10),
    "objects": (0, 20),
    "quest_length": (1, 10),
    "seed": (0, 2**31 - 1),
}
"""Inclusive bounds of each field: beyond them TextWorld is slow to compile or cannot place the quest."""

SPEC_REJECT_REASONS = ("unparseable_spec", "missing_field", "unknown_field", "wrong_type", "out_of_range")


class SpecRejected(ValueError):
    """A spec that cannot be a task: malformed (a SPEC_REJECT_REASONS reason, the message names the field) or
    compiling to no winnable game of its quest length (engine.GAME_REJECT_REASONS). `reason` is kept with the
    simulator's output."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class GameSpec:
    rooms: int
    objects: int
    quest_length: int
    seed: int

    @classmethod
    def from_dict(cls, values: Any) -> GameSpec:
        if not isinstance(values, dict):
            raise SpecRejected("unparseable_spec", f"a game spec is a JSON object, not {type(values).__name__}")
        names = [field.name for field in fields(cls)]
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise SpecRejected("unknown_field", f"{unknown[0]}: not a game spec field (fields: {', '.join(names)})")
        for name in names:
            if name not in values:
                raise SpecRejected("missing_field", f"{name}: missing")
            value = values[name]
            if not isinstance(value, int) or isinstance(value, bool):
                raise SpecRejected("wrong_type", f"{name}: expected an integer, got {value!r}")
            low, high = LIMITS[name]
            if not low <= value <= high:
                raise SpecRejected("out_of_range", f"{name}: {value} is outside [{low}, {high}]")
        return cls(**{name: values[name] for name in names})

    @classmethod
    def from_json(cls, text: str) -> GameSpec:
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecRejected("unparseable_spec", f"not JSON: {exc.msg} at character {exc.pos}") from None
        return cls.from_dict(values)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @property
    def key(self) -> str:
        """Names the compiled game: equal specs share one file."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]
