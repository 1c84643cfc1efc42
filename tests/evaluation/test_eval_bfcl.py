"""BFCL scorer fidelity: gold answers score 100%, each failure kind scores 0, and a hand-checked table agrees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from genenv.domains.tool_call.calls import format_value
from genenv.domains.tool_call.checker import check, decode, makes_call, standardise
from genenv.evaluation.bfcl import Bfcl

TABLE = json.loads((Path(__file__).parent / "bfcl_hand_checked.json").read_text(encoding="utf-8"))


def _case_id(case: dict[str, Any]) -> str:
    return f"{case['category']}-{case['rule'][:50]}"


@pytest.mark.parametrize("case", TABLE["cases"], ids=_case_id)
def test_hand_checked_table(case: dict[str, Any]) -> None:
    functions = TABLE["functions"][case["functions"]]
    answers = TABLE["possible_answers"].get(case["functions"])
    verdict = check(case["category"], functions, case["output"], answers)
    assert (verdict.valid, verdict.error) == (case["valid"], case["error"]), case["rule"]


def test_table_covers_the_rules() -> None:
    cases = TABLE["cases"]
    assert len(cases) >= 30
    assert {c["category"] for c in cases} == {"simple_python", "multiple", "parallel", "irrelevance"}
    assert sum(c["valid"] for c in cases) >= 15 and sum(not c["valid"] for c in cases) >= 15


def _gold_value(options: list[Any]) -> Any:
    """The first allowed value; dict answers hold allowed lists per key, so recurse into them."""
    value = next(option for option in options if option != "")
    if isinstance(value, dict):
        return {k: _gold_value(v) for k, v in value.items() if any(o != "" for o in v)}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [{k: _gold_value(v) for k, v in item.items() if any(o != "" for o in v)} for item in value]
    return value


def gold_output(answers: list[dict[str, dict[str, list[Any]]]]) -> str:
    calls = []
    for answer in answers:
        name, allowed = next(iter(answer.items()))
        arguments = {k: _gold_value(v) for k, v in allowed.items() if any(o != "" for o in v)}
        calls.append(f"{name}({', '.join(f'{k}={format_value(v)}' for k, v in arguments.items())})")
    return "[" + ", ".join(calls) + "]"


@pytest.fixture(scope="module")
def bfcl_items(benchmark_dir: Path):
    return Bfcl().load(benchmark_dir)


def test_gold_answers_score_100_percent(bfcl_items) -> None:
    benchmark = Bfcl()
    counts = {category: 0 for category in benchmark.categories}
    for item in bfcl_items:
        output = "I cannot answer that with these functions." if item.category == "irrelevance" else None
        output = output or gold_output(item.reference["ground_truth"])
        score = benchmark.score(item, output)
        assert score.scores == {"accuracy": 1.0}, (item.item_id, output, score.error)
        counts[item.category] += 1
    assert counts == {"simple_python": 400, "multiple": 200, "parallel": 200, "irrelevance": 240}


def test_parallel_gold_in_reverse_order_scores_100_percent(bfcl_items) -> None:
    """Any order matches, except where BFCL's greedy matching binds an expected call whose allowed values overlap
    another's to the wrong output call: parallel_178 (its first call allows "Microsoft" or "Apple")."""
    benchmark = Bfcl()
    failing = set()
    for item in (i for i in bfcl_items if i.category == "parallel"):
        reversed_gold = gold_output(list(reversed(item.reference["ground_truth"])))
        if benchmark.score(item, reversed_gold).scores["accuracy"] != 1.0:
            failing.add(item.item_id)
    assert failing == {"parallel_178"}


def _first(bfcl_items, category: str):
    return next(item for item in bfcl_items if item.category == category)


FAILURES = {
    "wrong_name": ("simple_python", lambda gold: gold.replace("calculate_triangle_area", "triangle_area", 1)),
    "missing_required": ("simple_python", lambda gold: gold.replace("base=10, ", "")),
    "wrong_type": ("simple_python", lambda gold: gold.replace("base=10", 'base="ten"')),
    "value_not_allowed": ("simple_python", lambda gold: gold.replace("base=10", "base=11")),
    "extra_call": ("simple_python", lambda gold: gold[:-1] + ", " + gold[1:]),
    "missing_call": ("parallel", lambda gold: gold.split("), ")[0] + ")]"),
}


@pytest.mark.parametrize("kind", sorted(FAILURES))
def test_each_failure_kind_scores_zero(bfcl_items, kind: str) -> None:
    category, corrupt = FAILURES[kind]
    item = _first(bfcl_items, category)
    gold = gold_output(item.reference["ground_truth"])
    assert Bfcl().score(item, gold).scores["accuracy"] == 1.0
    wrong = corrupt(gold)
    assert wrong != gold
    assert Bfcl().score(item, wrong).scores["accuracy"] == 0.0, wrong


def test_a_call_on_an_irrelevance_item_scores_zero(bfcl_items) -> None:
    item = _first(bfcl_items, "irrelevance")
    function = item.reference["functions"][0]
    call = f"[{function['name']}({', '.join(f'{p}=1' for p in function['parameters']['required'])})]"
    score = Bfcl().score(item, call)
    assert score.scores["accuracy"] == 0.0 and score.error == "irrelevance_error:decoder_success"


def test_decoder_never_executes_model_text(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = f"[f(a=__import__('pathlib').Path({str(marker)!r}).touch())]"
    with pytest.raises(ValueError):
        decode(hostile)
    assert makes_call(hostile)
    assert not marker.exists()


def test_standardise_follows_bfcl() -> None:
    assert standardise("April 1, 2024") == standardise("april 1 2024") == "april12024"
    assert standardise("it's") == 'it"s'
