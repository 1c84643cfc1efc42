"""Abstention tasks for tool_call, built from D_train by construction: a request the offered functions cannot serve,
answered `[]` (BFCL's irrelevance).

Three kinds, so the agent learns the boundary and not a shortcut:
- unrelated: the request offered the functions of an unrelated task (no shared name, namespace or keyword);
- same_family: the request offered another function of the same namespace (`weather.get_sun_times` for a forecast
  request): related docs, no function that serves it;
- missing_value: the request with a required value taken out ("Check whether some is prime"), offered its own
  functions: BFCL's prompt asks the model to point out a question that lacks a required parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from random import Random
from typing import Any

from genenv.domains.base import TaskInstance
from genenv.domains.tool_call import intent
from genenv.domains.tool_call.calls import parse_calls
from genenv.domains.tool_call.grounding import Stated
from genenv.domains.tool_call.mentions import words

Built = tuple[TaskInstance, str] | None
"""An abstention task and the id of the D_train task whose functions it offers; None when a draw does not work."""
Builder = Callable[[Random, str], Built]
PLACEHOLDERS = {str: "something", int: "some", float: "some"}
"""What stands in for a value taken out of a request."""


def namespace(name: str) -> str:
    """'weather.get_forecast' -> 'weather.'; a name without a dot is its own namespace."""
    return name.rpartition(".")[0] + "." if "." in name else name


def unrelated(offered: TaskInstance, request: TaskInstance, task_id: str) -> TaskInstance | None:
    """`request`'s question offered only `offered`'s functions: valid when none of them shares a name or a namespace
    with the calls that serve the request, and the request speaks for none of them (intent.mismatch)."""
    calls = parse_calls(request.answer)
    functions = offered.spec["functions"]
    question = request.spec["question"]
    needed = {call.name for call in calls} | {namespace(call.name) for call in calls}
    given = {f["name"] for f in functions} | {namespace(f["name"]) for f in functions}
    if not calls or needed & given or intent.mismatch([], functions, question):
        return None
    return TaskInstance(task_id, {"functions": functions, "question": question}, "[]", offered.family)


def same_family(offered: TaskInstance, request: TaskInstance, task_id: str) -> TaskInstance | None:
    """`request`'s question offered `offered`'s functions, which share a namespace with its calls but not a name: valid
    when the request speaks for the called functions by a keyword the offered ones lack, and for none of the offered
    ones by a keyword the called ones lack."""
    calls = parse_calls(request.answer)
    functions = offered.spec["functions"]
    called = {call.name for call in calls}
    given = {f["name"] for f in functions}
    if not calls or called & given or not {namespace(n) for n in called} & {namespace(n) for n in given}:
        return None
    question = request.spec["question"]
    needed = [f for f in request.spec["functions"] if f["name"] in called]
    if not intent.speaks_only_for(question, needed, functions):
        return None
    return TaskInstance(task_id, {"functions": functions, "question": question}, "[]", offered.family)


def missing_value(request: TaskInstance, task_id: str, rng: Random) -> TaskInstance | None:
    """`request` with one required value of its one call taken out, offered its own functions: valid when the value
    is named exactly once, the request no longer states it, and still speaks for the called function."""
    calls = parse_calls(request.answer)
    if len(calls) != 1:
        return None
    functions = request.spec["functions"]
    schema = next(f for f in functions if f["name"] == calls[0].name)
    required = [p for p in schema["parameters"].get("required", []) if type(calls[0].arguments.get(p)) in PLACEHOLDERS]
    if not required:
        return None
    value = calls[0].arguments[rng.choice(required)]
    question = _without(request.spec["question"], value)
    if question is None or Stated.of(question).names(value) or intent.mismatch(calls, functions, question):
        return None
    if not intent.keywords(schema) & intent.said(question):  # the request still asks for the function
        return None
    return TaskInstance(task_id, {"functions": functions, "question": question}, "[]", request.family)


def _without(question: str, value: Any) -> str | None:
    """`question` with the literal mention of `value` replaced by a placeholder; None unless there is exactly one."""
    text = f"{value:g}" if isinstance(value, float) else str(value)
    mentions = list(re.finditer(rf"(?<![\w.]){re.escape(text)}(?![\w]|\.\d)", question, re.IGNORECASE))
    if len(mentions) != 1 or not words(text):
        return None
    start, end = mentions[0].span()
    return question[:start] + PLACEHOLDERS[type(value)] + question[end:]


def builders(pool: Sequence[TaskInstance]) -> dict[str, Builder]:
    """One builder per kind, each drawing what it needs from the call tasks of `pool` (D_train) with the generator."""
    calls = [task for task in pool if parse_calls(task.answer)]
    by_namespace: dict[str, list[TaskInstance]] = {}
    for task in pool:
        for space in {namespace(f["name"]) for f in task.spec["functions"]}:
            by_namespace.setdefault(space, []).append(task)

    def draw_unrelated(rng: Random, task_id: str) -> Built:
        if len(pool) < 2 or not calls:
            return None
        request, offered = rng.choice(calls), rng.choice(pool)
        return _with_source(unrelated(offered, request, task_id), offered)

    def draw_same_family(rng: Random, task_id: str) -> Built:
        if not calls:
            return None
        request = rng.choice(calls)
        spaces = sorted({namespace(call.name) for call in parse_calls(request.answer)})
        candidates = [task for space in spaces for task in by_namespace.get(space, []) if task is not request]
        offered = rng.choice(candidates) if candidates else None
        return None if offered is None else _with_source(same_family(offered, request, task_id), offered)

    def draw_missing_value(rng: Random, task_id: str) -> Built:
        if not calls:
            return None
        request = rng.choice(calls)
        return _with_source(missing_value(request, task_id, rng), request)

    return {"unrelated": draw_unrelated, "same_family": draw_same_family, "missing_value": draw_missing_value}


def _with_source(task: TaskInstance | None, offered: TaskInstance) -> Built:
    return None if task is None else (task, offered.task_id)
