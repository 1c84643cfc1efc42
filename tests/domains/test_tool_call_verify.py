"""R_agent for tool calls: exact match of the call multiset (Eq. 1, structured case)."""

from __future__ import annotations

import pytest

from domains.base import TaskInstance
from domains.tool_call import ToolCallDomain

FUNCTIONS = [
    {
        "name": "weather.forecast",
        "description": "Forecast.",
        "parameters": {
            "type": "dict",
            "properties": {
                "city": {"type": "string", "description": "City."},
                "days": {"type": "integer", "description": "Days.", "default": 3},
                "metric": {"type": "boolean", "description": "Metric units.", "default": True},
            },
            "required": ["city"],
        },
    },
    {
        "name": "convert",
        "description": "Convert.",
        "parameters": {
            "type": "dict",
            "properties": {"value": {"type": "float", "description": "Value."}},
            "required": ["value"],
        },
    },
]
DOMAIN = ToolCallDomain()


def task(answer: str) -> TaskInstance:
    return TaskInstance("t1", {"functions": FUNCTIONS, "question": "q"}, answer, "convert+weather.forecast")


@pytest.mark.parametrize(
    ("output", "reward"),
    [
        ('[weather.forecast(city="Lima", days=5)]', 1.0),
        ('[weather.forecast(days=5, city="Lima")]', 1.0),
        ('weather.forecast(city=" lima ", days=5)', 1.0),
        ('```python\n[weather.forecast(city="Lima", days=5)]\n```', 1.0),
        ('[weather.forecast(city="Lima", days=5.0)]', 1.0),
        ('[weather.forecast(city="Lima", days=5, metric=True)]', 1.0),
        ('[weather_forecast(city="Lima", days=5)]', 0.0),
        ("[weather.forecast(days=5)]", 0.0),
        ('[weather.forecast(city="Lima", days=6)]', 0.0),
        ('[weather.forecast(city="Lima", days="5")]', 0.0),
        ('[weather.forecast(city="Lima", days=5, metric=1)]', 0.0),
        ('[weather.forecast(city="Lima", days=5), convert(value=1)]', 0.0),
        ("[]", 0.0),
    ],
)
def test_single_call(output: str, reward: float) -> None:
    verdict = DOMAIN.verify(output, task('[weather.forecast(city="Lima", days=5)]'))
    assert verdict.reward == reward
    assert verdict.parse_error is None


def test_parallel_calls_match_in_any_order() -> None:
    reference = task('[convert(value=2), weather.forecast(city="Oslo")]')
    assert DOMAIN.verify('[weather.forecast(city="Oslo"), convert(value=2.0)]', reference).reward == 1.0
    assert DOMAIN.verify("[convert(value=2)]", reference).reward == 0.0
    assert DOMAIN.verify('[convert(value=2), convert(value=2), weather.forecast(city="Oslo")]', reference).reward == 0.0


def test_missing_argument_equals_its_default() -> None:
    assert (
        DOMAIN.verify('[weather.forecast(city="Oslo", days=3)]', task('[weather.forecast(city="Oslo")]')).reward == 1.0
    )
    assert (
        DOMAIN.verify('[weather.forecast(city="Oslo")]', task('[weather.forecast(city="Oslo", days=3)]')).reward == 1.0
    )
    assert (
        DOMAIN.verify('[weather.forecast(city="Oslo")]', task('[weather.forecast(city="Oslo", days=4)]')).reward == 0.0
    )


def test_verdict_reports_the_canonical_action() -> None:
    verdict = DOMAIN.verify("[convert(value=2)] ", task("[convert(value=2)]"))
    assert verdict.parsed_action == "[convert(value=2)]"


def test_garbage_scores_zero_with_parse_error() -> None:
    verdict = DOMAIN.verify("I think you should call the convert function.", task("[convert(value=2)]"))
    assert verdict.reward == 0.0
    assert verdict.parsed_action is None
    assert verdict.parse_error == "not valid call syntax: SyntaxError"
