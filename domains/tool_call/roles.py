"""Do arguments take the roles the request gives their values? The grounding check only asks that each value be
stated; a simulator that swaps two stated values ("a ride from the office to the beach" -> pickup="the beach"), or
puts one stated value in two roles ("a passport from Japan, visit Norway" -> passport_country="Norway",
destination_country="Norway"), passes it and teaches the wrong call.

A request gives a value its role by a cue word right before it ("from X", "to X", "into X", "how many X", "pick me up
at X", a number before a unit: "1.5 meters" is the amount's unit, so the source), or, where neither value has a cue,
by their order (the source is named first).
"""

from __future__ import annotations

from typing import Any

from genenv.domains.tool_call.calls import Call
from genenv.domains.tool_call.mentions import NUMBER_WORDS, words
from genenv.domains.tool_call.names import names_of
from genenv.domains.tool_call.schema import is_number

SOURCE, TARGET = "source", "target"
ROLE_WORDS = {
    SOURCE: frozenset({"from", "source", "origin", "pickup", "base", "departure"}),
    TARGET: frozenset({"to", "target", "destination", "dropoff", "arrival"}),
}
"""Words of a parameter's name that give it a role (`from_unit`, `pickup`, `destination_country`)."""
CUES = {
    SOURCE: frozenset({("from",), ("up", "at")}),
    TARGET: frozenset({("to",), ("into",), ("many",)}),
}
"""Words right before a value that give it its role ("how many meters": the unit asked for; "pick me up at the
station": the pickup)."""
SKIPPED = frozenset({"the", "a", "an", "my", "our", "your", "this", "that"})
"""Words between a cue and its value that do not break the cue ("from the office")."""


def roles_swapped(calls: list[Call], functions: list[dict[str, Any]], request: str) -> bool:
    """True when a call's source and target arguments contradict the request's cue words, or, where the request cues
    neither value, its order (the target named before the source)."""
    said = words(request)
    return any(_contradicted(said, source, target) for source, target in _paired_values(calls, functions))


def roles_contradicted(calls: list[Call], functions: list[dict[str, Any]], request: str) -> bool:
    """True when the request cues a call's source value as a target somewhere, or its target value as a source, and no
    call takes it in that role: "from the office to the train station, pick them up at the train station" gives the
    train station both roles, so no call is right. A value that fills both roles of a call is left alone."""
    said = words(request)
    filled = _paired_values(calls, functions)
    taken = {(words(value), role) for pair in filled for value, role in zip(pair, (SOURCE, TARGET), strict=True)}
    return any(
        (words(value), other) not in taken and any(_cue(said, at) == other for at in _positions(said, value))
        for source, target in filled
        if words(source) != words(target)
        for value, other in ((source, TARGET), (target, SOURCE))
    )


def _paired_values(calls: list[Call], functions: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(source value, target value) of every role pair the calls fill with two strings: only strings are named in
    a request, so only they can take a role there."""
    by_name = {f["name"]: f["parameters"]["properties"] for f in functions}
    return [
        (call.arguments[source], call.arguments[target])
        for call in calls
        for source, target in role_pairs(by_name.get(call.name, {}))
        if isinstance(call.arguments.get(source), str) and isinstance(call.arguments.get(target), str)
    ]


def value_reused(calls: list[Call], request: str) -> bool:
    """True when a call puts one value (a string or a number) in more arguments than the request names it: each
    mention of a value gives it one role, so "Compress photo.png as zip" cannot fill both paths and archive, nor "for 8
    years" both years and principal."""
    said = words(request)
    return any(
        len(params) > max(1, len(_positions(said, value)))
        for call in calls
        for value, params in _values_by_words(call).values()
    )


def _values_by_words(call: Call) -> dict[tuple[str, ...], tuple[str, set[str]]]:
    """The call's string and number values (list items count), keyed by their words: (one spelling, the arguments
    they fill). A whole number is spelled without its ".0", as a request states it."""
    filled: dict[tuple[str, ...], tuple[str, set[str]]] = {}
    for param, value in call.arguments.items():
        for item in value if isinstance(value, list) else [value]:
            if is_number(item):
                item = str(int(item)) if float(item).is_integer() else str(item)
            if isinstance(item, str) and words(item):
                filled.setdefault(words(item), (item, set()))[1].add(param)
    return filled


def role_pairs(properties: dict[str, Any]) -> list[tuple[str, str]]:
    """(source parameter, target parameter) pairs of one function: one of each role whose names share everything but
    the role word (`from_unit`/`to_unit`), or the only parameter of each role."""
    roles = {name: role for name in properties if (role := _role(name)) is not None}
    sources = [name for name, role in roles.items() if role == SOURCE]
    targets = [name for name, role in roles.items() if role == TARGET]
    if len(sources) == 1 and len(targets) == 1:
        return [(sources[0], targets[0])]
    return [(s, t) for s in sources for t in targets if _rest(s) == _rest(t)]


def _role(name: str) -> str | None:
    parts = set(name.lower().split("_"))
    found = [role for role, role_words in ROLE_WORDS.items() if parts & role_words]
    return found[0] if len(found) == 1 else None


def _rest(name: str) -> tuple[str, ...]:
    return tuple(part for part in name.lower().split("_") if part not in ROLE_WORDS[SOURCE] | ROLE_WORDS[TARGET])


def _contradicted(said: tuple[str, ...], source: Any, target: Any) -> bool:
    """Every reading of the request contradicts the roles: where a value is named more than once (two calls of one
    function), one consistent pair of mentions is enough."""
    pairs = [(s, t) for s in _positions(said, source) for t in _positions(said, target) if s != t]
    return bool(pairs) and all(_contradicts(said, s, t) for s, t in pairs)


def _contradicts(said: tuple[str, ...], at_source: int, at_target: int) -> bool:
    cued_source, cued_target = _cue(said, at_source), _cue(said, at_target)
    if cued_source is None and cued_target is None:
        return at_target < at_source
    return cued_source == TARGET or cued_target == SOURCE


def _positions(said: tuple[str, ...], value: Any) -> set[int]:
    """Where the request names `value` (as itself or by another name), in words."""
    if not isinstance(value, str):
        return set()
    found = set()
    for name in names_of(value):
        needle = words(name)
        size = len(needle)
        found |= {i for i in range(len(said) - size + 1) if size and said[i : i + size] == needle}
    return found


def _cue(said: tuple[str, ...], at: int) -> str | None:
    """The role the words right before position `at` give the value there, if any."""
    before = at - 1
    while before >= 0 and said[before] in SKIPPED:
        before -= 1
    if before < 0:
        return None
    word = said[before]
    if word.replace(".", "", 1).isdigit() or word in NUMBER_WORDS:
        return SOURCE  # "1.5 meters", "100 USD": the unit or currency of the amount given
    ending = said[: before + 1]
    return next((role for role, cues in CUES.items() if any(ending[-len(cue) :] == cue for cue in cues)), None)
