"""The BFCL call syntax: what parses, what is refused and why, and the canonical format."""

from __future__ import annotations

import pytest

from genenv.domains.tool_call.calls import Call, ParseError, canonical_calls, format_calls, parse_calls


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[f(a=1, b="x")]', [Call("f", {"a": 1, "b": "x"})]),
        ('[weather.get(city="Lima"), g(n=-2.5)]', [Call("weather.get", {"city": "Lima"}), Call("g", {"n": -2.5})]),
        ("f(a=1)", [Call("f", {"a": 1})]),
        ("  \n[f()]\n ", [Call("f", {})]),
        ('```python\n[f(a="x")]\n```', [Call("f", {"a": "x"})]),
        ("```\nf(a=2)\n```", [Call("f", {"a": 2})]),
        (
            "[f(a=[1, 2], b={'k': None}, c=True, d=False)]",
            [Call("f", {"a": [1, 2], "b": {"k": None}, "c": True, "d": False})],
        ),
        ("[f(t=(1, 2))]", [Call("f", {"t": [1, 2]})]),
        ("[]", []),
    ],
)
def test_parses_valid_forms(text: str, expected: list[Call]) -> None:
    assert parse_calls(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty output"),
        ("[f(a=1)", "not valid call syntax: SyntaxError"),
        ("Sure! Here is the call: f(a=1)", "not valid call syntax: SyntaxError"),
        ("[f(1)]", "f: positional arguments are not allowed, use keyword=value"),
        ("[f(*xs)]", "f: *args is not allowed"),
        ("[f(**kw)]", "f: **kwargs is not allowed"),
        ("[f(a=x)]", "f: value of 'a' is not a literal"),
        ("[f(a=__import__('os').system('true'))]", "f: value of 'a' is not a literal"),
        ("[f(a=1+2j)]", "f: value of 'a' has unsupported type complex"),
        ("[f(a={1, 2})]", "f: value of 'a' has unsupported type set"),
        ("[f(a={1: 2})]", "f: dict keys of 'a' must be strings"),
        ("[f().g(a=1)]", "function name must be a plain or dotted name"),
        ("[x[0](a=1)]", "function name must be a plain or dotted name"),
        ("[f(a=1), 3]", "expected a function call, got Constant"),
        ('"f(a=1)"', "expected a function call, got Constant"),
        ("[f(a=1, a=2)]", "f: argument 'a' is given twice"),
    ],
)
def test_rejects_with_reason(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as error:
        parse_calls(text)
    assert str(error.value) == reason


def test_format_is_canonical_and_round_trips() -> None:
    calls = [
        Call("a.b", {"s": 'say "hi"\n', "n": -3, "x": 1.5, "ok": True, "none": None, "l": ["q", 2], "d": {"k": "v"}})
    ]
    text = format_calls(calls)
    assert text == '[a.b(s="say \\"hi\\"\\n", n=-3, x=1.5, ok=True, none=None, l=["q", 2], d={"k": "v"})]'
    assert parse_calls(text) == calls
    assert format_calls(parse_calls("[f(b='x', a=1), g()]")) == '[f(b="x", a=1), g()]'


def test_canonical_form_ignores_order() -> None:
    assert canonical_calls(parse_calls("[g(z=1), f(b=2, a=1)]")) == canonical_calls(
        parse_calls("[f(a=1, b=2), g(z=1)]")
    )
    assert canonical_calls(parse_calls("[g(z=1), f(b=2, a=1)]")) == "[f(a=1, b=2), g(z=1)]"
