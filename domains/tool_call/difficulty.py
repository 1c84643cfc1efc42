"""What makes a tool_call task harder, part by part: the simulator is asked for "more arguments or values to infer"
(prompts.DIFFICULTY), the warm start pairs seeds by the sum (tasks/warm_start.py), and each generation's metrics keep
the mean of every part, so the dynamics report shows which part the curriculum moved."""

from __future__ import annotations

from typing import Any

from genenv.domains.base import TaskInstance
from genenv.domains.tool_call.calls import parse_calls
from genenv.domains.tool_call.grounding import Stated

PARTS = ("calls", "arguments", "optional", "distractors", "inferred")
"""calls made; argument values given; of them, values for optional parameters; offered functions not called; values
the request does not state as themselves (a boolean, an enum or date named another way)."""


def difficulty_parts(task: TaskInstance) -> dict[str, float]:
    """Each part of PARTS counted on `task`'s answer against its offered functions and request (0s for `[]` but
    its distractors: every offered function is one)."""
    calls = parse_calls(task.answer)
    offered = {f["name"]: f for f in task.spec["functions"]}
    stated = Stated.of(task.spec["question"])
    values = [(call.name, name, value) for call in calls for name, value in call.arguments.items()]
    return {
        "calls": float(len(calls)),
        "arguments": float(len(values)),
        "optional": float(sum(name not in _required(offered.get(function)) for function, name, _ in values)),
        "distractors": float(len(set(offered) - {call.name for call in calls})),
        "inferred": float(sum(not _stated(value, stated) for _, _, value in values)),
    }


def _required(function: dict[str, Any] | None) -> set[str]:
    return set((function or {}).get("parameters", {}).get("required", []))


def _stated(value: Any, stated: Stated) -> bool:
    """The request names `value` as itself (a list: every element); a boolean is always inferred."""
    if isinstance(value, bool):
        return False
    if isinstance(value, list):
        return all(_stated(v, stated) for v in value)
    return stated.names(value)
