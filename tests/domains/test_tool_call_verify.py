"""R_agent for tool calls (Eq. 1, structured case): BFCL's AST checker on the task's possible answer, plus the
schema, so that an answer rewarded 1.0 in training is one BFCL counts as correct."""

from __future__ import annotations

import pytest

from genenv.config import GenEnvConfig
from genenv.domains.base import TaskInstance, get_domain
from genenv.domains.tool_call import ToolCallDomain
from genenv.domains.tool_call.calls import parse_calls
from genenv.domains.tool_call.checker import check, possible_answers

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
                "unit": {"type": "string", "description": "Unit.", "enum": ["mi", "km"], "default": "km"},
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
        ('```\n[weather.forecast(city="Lima", days=5)]\n```', 1.0),
        ('[weather.forecast(city="Lima", days=5.0)]', 0.0),
        ('[weather.forecast(city="Lima", days=5, unit="km")]', 1.0),
        ('[weather.forecast(city="Lima", days=5, unit="KM")]', 0.0),
        ('[weather.forecast(city="Lima", days=5, unit="mi")]', 0.0),
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


@pytest.mark.parametrize(
    "output",
    [
        '```python\n[weather.forecast(city="Lima", days=5)]\n```',
        '```json\n[weather.forecast(city="Lima", days=5)]\n```',
    ],
)
def test_fence_with_a_language_scores_zero_as_in_bfcl(output: str) -> None:
    verdict = DOMAIN.verify(output, task('[weather.forecast(city="Lima", days=5)]'))
    assert (verdict.reward, verdict.parsed_action) == (0.0, None)
    assert verdict.parse_error == "not valid call syntax: SyntaxError"


def test_float_for_an_integer_and_enum_case_score_zero() -> None:
    """BFCL rejects 264.0 for an integer; BFCL accepts "MI" for "mi" but the schema does not, so training does not."""
    reference = task('[weather.forecast(city="Lima", days=264, unit="mi")]')
    assert DOMAIN.verify('[weather.forecast(city="Lima", days=264, unit="mi")]', reference).reward == 1.0
    assert DOMAIN.verify('[weather.forecast(city="Lima", days=264.0, unit="mi")]', reference).reward == 0.0
    shouted = '[weather.forecast(city="Lima", days=264, unit="MI")]'
    answers = possible_answers(parse_calls(reference.answer), FUNCTIONS)
    assert check("parallel", FUNCTIONS, shouted, answers).valid
    verdict = DOMAIN.verify(shouted, reference)
    assert (verdict.reward, verdict.parsed_action) == (0.0, shouted)


def test_possible_answer_follows_bfcl() -> None:
    calls = parse_calls('[weather.forecast(city="Lima", days=3, metric=False), convert(value=2)]')
    assert possible_answers(calls, FUNCTIONS) == [
        {"weather.forecast": {"city": ["Lima"], "days": [3, ""], "metric": [False], "unit": ["", "km"]}},
        {"convert": {"value": [2]}},
    ]
    assert possible_answers(parse_calls("[weather.forecast(metric=True)]"), FUNCTIONS)[0]["weather.forecast"] == {
        "city": [""],
        "days": ["", 3],
        "metric": [True, ""],
        "unit": ["", "km"],
    }


@pytest.mark.parametrize(
    ("output", "reward", "parsed_action"),
    [
        ("[]", 1.0, "[]"),
        ("None of the functions can be used for this.", 1.0, None),
        ('[weather.forecast(city="Lima")]', 0.0, '[weather.forecast(city="Lima")]'),
        ("[weather.forecast(city=Lima)]", 0.0, '[weather.forecast(city="Lima")]'),
    ],
)
def test_abstention_task_follows_bfcl_irrelevance(output: str, reward: float, parsed_action: str | None) -> None:
    verdict = DOMAIN.verify(output, task("[]"))
    assert (verdict.reward, verdict.parsed_action) == (reward, parsed_action)
    assert check("irrelevance", FUNCTIONS, output, None).valid == (reward == 1.0)


OUTPUTS = [
    '[weather.forecast(city="Lima", days=5)]',
    '[weather.forecast(city="lima", days=5, unit="km")]',
    '[weather.forecast(city="Lima", days=5, unit="KM")]',
    '[weather.forecast(city="Lima", days=5.0)]',
    '[weather.forecast(city="Lima", days=5), weather.forecast(city="Lima", days=5)]',
    'weather.forecast(city="Lima", days=5)',
    '```python\n[weather.forecast(city="Lima", days=5)]\n```',
    "[]",
]


@pytest.mark.parametrize("output", OUTPUTS)
def test_training_reward_one_implies_bfcl_counts_it(output: str) -> None:
    reference = task('[weather.forecast(city="Lima", days=5)]')
    answers = possible_answers(parse_calls(reference.answer), FUNCTIONS)
    if DOMAIN.verify(output, reference).reward == 1.0:
        assert check("parallel", FUNCTIONS, output, answers).valid
        assert check("simple_python", FUNCTIONS, output, answers).valid


def test_a_wrong_call_of_the_right_function_can_score_above_abstaining() -> None:
    """agent_wrong_call_reward: on a task that asks for a call, the right function with wrong arguments scores the
    credit, abstaining and another function 0, the right call 1; on an abstention task every call scores 0."""
    credited = get_domain("tool_call", GenEnvConfig(agent_wrong_call_reward=0.2))
    seeds = credited.load_seeds()
    task = next(s for s in seeds if s.answer.startswith("[finance.get_exchange_rate("))
    assert credited.verify(task.answer, task).reward == 1.0
    assert credited.verify('[finance.get_exchange_rate(base="XXX", target="YYY")]', task).reward == 0.2
    assert credited.verify("[]", task).reward == 0.0
    assert credited.verify('[finance.stock_quote(symbol="X")]', task).reward == 0.0
    abstention = next(s for s in seeds if credited.is_abstention(s))
    name = abstention.spec["functions"][0]["name"]
    assert credited.verify(f"[{name}()]", abstention).reward == 0.0
    assert get_domain("tool_call").verify('[finance.get_exchange_rate(base="XXX", target="YYY")]', task).reward == 0.0
