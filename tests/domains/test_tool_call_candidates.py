"""Simulator output -> Candidate: every reject reason on a realistic malformed output, and a valid one kept."""

from __future__ import annotations

import inspect

import pytest

from genenv.domains.base import Candidate, Domain, TaskInstance, ValidationContext, Verdict
from genenv.domains.decontamination import BenchmarkIndex
from genenv.domains.tool_call import REJECT_REASONS, ToolCallDomain
from genenv.domains.tool_call.calls import canonical_calls, parse_calls

FUNCTIONS = [
    {
        "name": "weather.forecast",
        "description": "Forecast.",
        "parameters": {
            "type": "dict",
            "properties": {
                "city": {"type": "string", "description": "City."},
                "days": {"type": "integer", "description": "Days.", "default": 3},
            },
            "required": ["city"],
        },
    },
    {
        "name": "convert",
        "description": "Convert a length.",
        "parameters": {
            "type": "dict",
            "properties": {
                "value": {"type": "float", "description": "Value."},
                "unit": {"type": "string", "description": "Unit.", "enum": ["km", "mi"]},
                "tags": {"type": "array", "description": "Tags.", "items": {"type": "string"}},
            },
            "required": ["value", "unit"],
        },
    },
]
SEED = TaskInstance(
    "tc-0001",
    {"functions": FUNCTIONS, "question": "What's the weather in Oslo for 2 days?"},
    '[weather.forecast(city="Oslo", days=2)]',
    "convert+weather.forecast",
)
DOMAIN = ToolCallDomain()


def candidate(raw: str, truncated: bool = False) -> Candidate:
    return DOMAIN.parse_candidate(raw, SEED, "g1-tc-0001-0", truncated)


def checked(raw: str, context: ValidationContext | None = None) -> Candidate:
    return DOMAIN.validate(candidate(raw), context or ValidationContext())


def test_valid_candidate_is_kept_as_a_task() -> None:
    result = checked(
        'Request: Will it rain in Lima over the next 5 days?\nAnswer: [weather.forecast(city="Lima", days=5)]'
    )
    assert result.valid
    assert result.reject_reason is None
    assert result.task == TaskInstance(
        "g1-tc-0001-0",
        {"functions": FUNCTIONS, "question": "Will it rain in Lima over the next 5 days?"},
        '[weather.forecast(city="Lima", days=5)]',
        "convert+weather.forecast",
    )


def test_lenient_layouts_parse() -> None:
    raw = "**Request:** \"Convert 3 km.\"\n**Answer:**\n[convert(value=3, unit='km')]\nRequest: another one"
    task = checked(raw).task
    assert task is not None
    assert task.spec["question"] == "Convert 3 km."
    assert task.answer == '[convert(value=3, unit="km")]'
    wrapped = checked("Request: Convert 3 km,\nthen nothing else.\nAnswer: `convert(value=3, unit='km')`").task
    assert wrapped is not None
    assert wrapped.spec["question"] == "Convert 3 km, then nothing else."


@pytest.mark.parametrize(
    ("raw", "truncated", "reason"),
    [
        ("", False, "empty"),
        ("  \n ", False, "empty"),
        (
            "Request: " + "Tell me about the weather, " * 80 + '\nAnswer: [weather.forecast(city="Oslo")]',
            False,
            "too_long",
        ),
        ('Request: Forecast for Bergen for 4 days?\nAnswer: [weather.forecast(city="Ber', True, "truncated"),
        ("Request: I am planning a trip to Bergen and would like to know whether", True, "truncated"),
        ('Answer: [weather.forecast(city="Oslo")]', False, "missing_request"),
        ('New task: forecast for Oslo\n[weather.forecast(city="Oslo")]', False, "missing_request"),
        ("Request: How warm will Oslo be tomorrow?\n", False, "missing_answer"),
        ("Request: How warm will Oslo be tomorrow?\nAnswer:", False, "missing_answer"),
        (
            "Request: How warm will Oslo be tomorrow?\nAnswer: call weather.forecast for Oslo",
            False,
            "unparseable_answer",
        ),
        ("Request: How warm will Oslo be tomorrow?\nAnswer: [weather.forecast(Oslo)]", False, "unparseable_answer"),
        ("Request: How warm will Oslo be tomorrow?\nAnswer: None", False, "unparseable_answer"),
    ],
)
def test_parse_rejects(raw: str, truncated: bool, reason: str) -> None:
    result = candidate(raw, truncated)
    assert (result.task, result.reject_reason) == (None, reason)
    assert DOMAIN.validate(result, ValidationContext()) == result


def test_truncated_output_with_complete_answer_is_kept() -> None:
    result = candidate('Request: Forecast for Bergen?\nAnswer: [weather.forecast(city="Bergen")]\nRequest: Conv', True)
    assert result.valid


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ('[weather.get_forecast(city="Oslo")]', "unknown_function"),
        ('[weather.forecast(city="Oslo"), get_time(city="Oslo")]', "unknown_function"),
        ("[weather.forecast(days=2)]", "missing_required_argument"),
        ("[convert(value=2)]", "missing_required_argument"),
        ('[weather.forecast(city="Oslo", hours=12)]', "unknown_argument"),
        ('[weather.forecast(city="Oslo", days="two")]', "wrong_type"),
        ('[weather.forecast(city="Oslo", days=2.5)]', "wrong_type"),
        ('[weather.forecast(city="Oslo", days=True)]', "wrong_type"),
        ("[weather.forecast(city=None)]", "wrong_type"),
        ('[convert(value="3", unit="km")]', "wrong_type"),
        ('[convert(value=3, unit="km", tags="x")]', "wrong_type"),
        ('[convert(value=3, unit="km", tags=["x", 1])]', "wrong_type"),
        ('[convert(value=3, unit="miles")]', "value_not_allowed"),
    ],
)
def test_schema_rejects(answer: str, reason: str) -> None:
    result = checked(f"Request: Some request about Oslo.\nAnswer: {answer}")
    assert result.reject_reason == reason
    assert result.task is not None


def test_int_is_accepted_where_float_is_declared() -> None:
    assert checked('Request: Convert 3 miles for my trip.\nAnswer: [convert(value=3, unit="mi", tags=["trip"])]').valid


def test_abstention_answer_parses_and_validates() -> None:
    """`Answer: []` says no offered function fits; it is kept unless the request speaks for an offered function."""
    result = checked("Request: Who wrote the novel Middlemarch?\nAnswer: []")
    assert result.valid
    assert result.task is not None and result.task.answer == "[]"
    fitting = checked("Request: Give me the weather forecast for Oslo.\nAnswer: []")
    assert fitting.reject_reason == "function_mismatch"


def test_heldout_overlap() -> None:
    heldout_seed = TaskInstance("tc-0009", SEED.spec, '[weather.forecast(days=5, city="Lima")]', SEED.family)
    assert DOMAIN.answer_key(heldout_seed) == canonical_calls(parse_calls(heldout_seed.answer))
    heldout = {DOMAIN.answer_key(heldout_seed), "[]"}
    context = ValidationContext(heldout_calls=heldout)
    same_call = 'Request: Five-day forecast for Lima, please.\nAnswer: [weather.forecast(city="Lima", days=5)]'
    assert checked(same_call, context).reject_reason == "heldout_overlap"
    assert checked(same_call.replace("Lima", "Quito"), context).valid
    assert checked("Request: Who wrote the novel Middlemarch?\nAnswer: []", context).valid


def test_duplicate_is_detected_but_not_recorded() -> None:
    seen = {DOMAIN.dedup_key(SEED)}
    raw = "Request: what's the WEATHER in Oslo for 2 days\nAnswer: [weather.forecast(days=2, city='Oslo')]"
    assert checked(raw, ValidationContext(seen_keys=seen)).reject_reason == "duplicate"
    assert seen == {DOMAIN.dedup_key(SEED)}
    assert checked(raw.replace("2 days", "two days"), ValidationContext(seen_keys=seen)).valid


def test_benchmark_overlap() -> None:
    index = BenchmarkIndex.from_texts(["What will the weather be like in Tallinn during the first week of May?"])
    raw = (
        "Request: Hi! What will the weather be like in Tallinn during the first week of May, roughly?\n"
        'Answer: [weather.forecast(city="Tallinn", days=7)]'
    )
    assert checked(raw, ValidationContext(is_contaminated=index.contains)).reject_reason == "benchmark_overlap"


def test_checker_rejecting_its_own_answer() -> None:
    class BrokenChecker(ToolCallDomain):
        def verify(self, output: str, task: TaskInstance) -> Verdict:
            return Verdict(reward=0.0, parsed_action=output)

    result = BrokenChecker().validate(
        candidate('Request: Oslo?\nAnswer: [weather.forecast(city="Oslo")]'), ValidationContext()
    )
    assert result.reject_reason == "checker_rejects_answer"


def test_dedup_key_normalises_question_and_answer() -> None:
    assert DOMAIN.dedup_key(SEED) == 'whats the weather in oslo for 2 days||[weather.forecast(city="Oslo", days=2)]'


def test_reject_vocabulary() -> None:
    assert REJECT_REASONS == (
        "empty",
        "too_long",
        "truncated",
        "missing_request",
        "missing_answer",
        "unparseable_answer",
        "unknown_function",
        "missing_required_argument",
        "unknown_argument",
        "wrong_type",
        "value_not_allowed",
        "checker_rejects_answer",
        "duplicate",
        "benchmark_overlap",
        "heldout_overlap",
        "ungrounded_argument",
        "list_of_one",
        "format_as_file_name",
        "placeholder_value",
        "roles_swapped",
        "roles_contradicted",
        "value_reused",
        "value_unused",
        "unit_mismatch",
        "function_mismatch",
        "enum_not_named",
        "enum_named_unused",
        "unit_named_unused",
        "question_as_order",
        "function_unrelated",
    )


def test_prompts() -> None:
    system, user = DOMAIN.agent_messages(SEED)
    assert system["role"] == "system" and user == {"role": "user", "content": "What's the weather in Oslo for 2 days?"}
    assert "[func_name1(params_name1=params_value1" in system["content"]
    assert "If none of the functions can be used, point it out." in system["content"]
    assert '"name": "weather.forecast"' in system["content"]
    sim_user = DOMAIN.simulator_messages(SEED, 0.375)[1]["content"]
    assert "The agent currently solves 38% of tasks like this." in sim_user
    assert 'Answer: [weather.forecast(city="Oslo", days=2)]' in sim_user
    assert "easier" in sim_user
    assert "harder" in DOMAIN.simulator_messages(SEED, 0.9)[1]["content"]
    assert "unknown" in DOMAIN.simulator_messages(SEED, None)[1]["content"]
    target = DOMAIN.simulator_target(SEED)
    assert target == 'Request: What\'s the weather in Oslo for 2 days?\nAnswer: [weather.forecast(city="Oslo", days=2)]'
    assert DOMAIN.parse_candidate(target, SEED, "x", truncated=False).task == TaskInstance(
        "x", SEED.spec, SEED.answer, SEED.family
    )


@pytest.mark.parametrize(
    ("success_rate", "alpha", "k_min", "hint"),
    [
        (0.75, 0.7, 0.1, "Keep a similar difficulty."),
        (0.85, 0.7, 0.1, "Make the new request harder"),
        (0.55, 0.7, 0.1, "Make the new request easier"),
        (0.65, 0.5, 0.2, "Keep a similar difficulty."),
        (0.35, 0.5, 0.2, "Keep a similar difficulty."),
        (0.25, 0.5, 0.2, "Make the new request easier"),
    ],
)
def test_difficulty_hint_follows_the_curriculum_band(
    success_rate: float, alpha: float, k_min: float, hint: str
) -> None:
    assert hint in DOMAIN.simulator_messages(SEED, success_rate, alpha=alpha, k_min=k_min)[1]["content"]


def test_simulator_may_answer_with_no_call() -> None:
    """One instruction for every seed, so a seed answered [] and a sibling with calls (warm start) never disagree."""
    abstention = TaskInstance("tc-0002", {"functions": FUNCTIONS, "question": "Who wrote Hamlet?"}, "[]", SEED.family)
    system, user = DOMAIN.simulator_messages(abstention, 0.5)
    assert "Request: Who wrote Hamlet?\nAnswer: []" in user["content"]
    assert "or [] when no function fits" in system["content"]
    instruction = user["content"].splitlines()[-1]
    assert "the calls that fulfil it, or [] if none of these functions can" in instruction
    assert DOMAIN.simulator_messages(SEED, 0.5)[1]["content"].splitlines()[-1] == instruction


def test_domain_protocol_takes_the_curriculum_band() -> None:
    parameters = inspect.signature(Domain.simulator_messages).parameters
    assert (parameters["alpha"].default, parameters["k_min"].default) == (0.5, 0.1)
    assert "structured" not in Domain.__annotations__
    assert not hasattr(DOMAIN, "structured")
