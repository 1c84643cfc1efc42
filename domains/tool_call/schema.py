"""Checking calls against BFCL-style function schemas: names, required and known arguments, types, enum values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from genenv.domains.tool_call.calls import Call


def is_number(value: Any) -> bool:
    """A JSON number: an int or a float, never a bool (which Python counts as an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": is_number,
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
}
SCHEMA_TYPES = tuple(_TYPE_CHECKS)


def schema_error(calls: list[Call], functions: list[dict[str, Any]]) -> str | None:
    """The first schema violation among `calls` as a reject reason, or None when all calls fit."""
    by_name = {f["name"]: f for f in functions}
    for call in calls:
        function = by_name.get(call.name)
        if function is None:
            return "unknown_function"
        properties = function["parameters"]["properties"]
        if any(p not in call.arguments for p in function["parameters"].get("required", [])):
            return "missing_required_argument"
        if any(a not in properties for a in call.arguments):
            return "unknown_argument"
        for arg, value in call.arguments.items():
            if not _has_type(value, properties[arg]):
                return "wrong_type"
            if "enum" in properties[arg] and value not in properties[arg]["enum"]:
                return "value_not_allowed"
    return None


def _has_type(value: Any, param: dict[str, Any]) -> bool:
    if not _TYPE_CHECKS[param["type"]](value):
        return False
    items = param.get("items")
    return items is None or not isinstance(value, list) or all(_has_type(v, items) for v in value)
