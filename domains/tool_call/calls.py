"""The BFCL call syntax `[f(a=1), g.h(b="x")]`: parsed with `ast` only (never eval) and formatted canonically."""

from __future__ import annotations

import ast
import json
import re
from typing import Any, NamedTuple

_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)
_LITERAL_TYPES = (bool, int, float, str, type(None), list, dict)


class ParseError(ValueError):
    """The text is not a list of calls with literal keyword arguments; the message says why."""


class Call(NamedTuple):
    name: str
    arguments: dict[str, Any]


def parse_calls(text: str) -> list[Call]:
    """Parse `[f(a=1), g.h(b="x")]` or a bare `f(a=1)`, optionally inside one ``` fence."""
    source = text.strip()
    fenced = _FENCE.match(source)
    if fenced:
        source = fenced.group(1).strip()
    if not source:
        raise ParseError("empty output")
    try:
        body = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ParseError(f"not valid call syntax: {exc.__class__.__name__}") from None
    nodes = body.elts if isinstance(body, ast.List) else [body]
    return [_call(node) for node in nodes]


def _call(node: ast.expr) -> Call:
    if not isinstance(node, ast.Call):
        raise ParseError(f"expected a function call, got {node.__class__.__name__}")
    name = _dotted_name(node.func)
    if any(isinstance(arg, ast.Starred) for arg in node.args):
        raise ParseError(f"{name}: *args is not allowed")
    if node.args:
        raise ParseError(f"{name}: positional arguments are not allowed, use keyword=value")
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise ParseError(f"{name}: **kwargs is not allowed")
        if keyword.arg in arguments:
            raise ParseError(f"{name}: argument {keyword.arg!r} is given twice")
        arguments[keyword.arg] = _literal(name, keyword.arg, keyword.value)
    return Call(name, arguments)


def _dotted_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted_name(node.value)}.{node.attr}"
    raise ParseError("function name must be a plain or dotted name")


def _literal(name: str, arg: str, node: ast.expr) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise ParseError(f"{name}: value of {arg!r} is not a literal") from None
    return _json_like(name, arg, value)


def _json_like(name: str, arg: str, value: Any) -> Any:
    """Keep values JSON-shaped (tuples become lists) so they compare and format predictably."""
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, _LITERAL_TYPES):
        raise ParseError(f"{name}: value of {arg!r} has unsupported type {type(value).__name__}")
    if isinstance(value, list):
        return [_json_like(name, arg, item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ParseError(f"{name}: dict keys of {arg!r} must be strings")
        return {key: _json_like(name, arg, item) for key, item in value.items()}
    return value


def format_value(value: Any) -> str:
    """Python literal with double-quoted strings, e.g. `["a", 1.5, True]`."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(format_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def format_calls(calls: list[Call]) -> str:
    """`[f(a=1, b="x")]`, keeping the given call and argument order."""
    parts = (f"{c.name}({', '.join(f'{k}={format_value(v)}' for k, v in c.arguments.items())})" for c in calls)
    return "[" + ", ".join(parts) + "]"


def canonical_calls(calls: list[Call]) -> str:
    """Order-free form of `calls` (arguments and calls sorted), for dedup keys."""
    normalised = [Call(c.name, dict(sorted(c.arguments.items()))) for c in calls]
    return format_calls(sorted(normalised, key=lambda c: format_calls([c])))
