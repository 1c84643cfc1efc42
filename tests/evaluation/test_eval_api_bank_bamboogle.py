"""API-Bank level-1 and Bamboogle scorers: gold answers score 100%, each failure kind scores 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from genenv.evaluation.api_bank import ApiBank, check, parse_api_call
from genenv.evaluation.bamboogle import Bamboogle, best_f1, exact_match, extract_answer
from genenv.evaluation.benchmark_registry import Item

GOLD = "API-Request: [ModifyRegistration(appointment_id='34567890', new_appointment_date='2023-03-26')]"


def test_api_bank_gold_answers_score_100_percent(benchmark_dir: Path) -> None:
    benchmark = ApiBank()
    items = benchmark.load(benchmark_dir)
    assert len(items) == 399
    assert all(benchmark.score(item, item.reference).scores == {"accuracy": 1.0} for item in items)


@pytest.mark.parametrize(
    ("output", "error"),
    [
        ("[ModifyRegistration(appointment_id='34567890', new_appointment_date='2023-03-26')]", None),
        ('Sure. API-Request: [ModifyRegistration(new_appointment_date="2023-03-26", appointment_id=34567890)]', None),
        ("[CancelRegistration(appointment_id='34567890', new_appointment_date='2023-03-26')]", "api_name_mismatch"),
        ("[ModifyRegistration(appointment_id='34567890')]", "input_mismatch"),
        ("[ModifyRegistration(appointment_id='34567890', new_appointment_date='2023-03-27')]", "input_mismatch"),
        ("[ModifyRegistration(appointment_id='34567890', new_appointment_date='2023-03-26', x='1')]", "input_mismatch"),
        ("I will modify your appointment now.", "no_api_call"),
    ],
)
def test_api_bank_failure_kinds(output: str, error: str | None) -> None:
    expected = parse_api_call(GOLD)
    assert expected is not None
    assert check(output, expected) == error


def test_api_bank_reads_its_own_unquotable_list_format() -> None:
    gold = "API-Request: [QueryMeeting(token='t1', attendees='['John Smith', 'Jane Doe']')]"
    expected = parse_api_call(gold)
    assert expected is not None and expected.arguments == {"token": "t1", "attendees": "["}
    assert check(gold, expected) is None
    assert check("[QueryMeeting(token='t2', attendees='['John Smith', 'Jane Doe']')]", expected) == "input_mismatch"


def test_bamboogle_gold_answers_score_100_percent(benchmark_dir: Path) -> None:
    benchmark = Bamboogle()
    items = benchmark.load(benchmark_dir)
    assert len(items) == 125
    for item in items:
        assert benchmark.score(item, item.reference[0]).scores == {"exact_match": 1.0, "f1": 1.0}


def test_bamboogle_normalisation_and_f1() -> None:
    item = Item("q", "test", [], ["Titan IIIE", "Titan 3E"])
    score = Bamboogle().score(item, "Answer: the Titan IIIE.\nIt launched Voyager 2.")
    assert score.scores == {"exact_match": 1.0, "f1": 1.0} and score.error is None
    wrong = Bamboogle().score(item, "Atlas V")
    assert wrong.scores == {"exact_match": 0.0, "f1": 0.0} and wrong.error == "wrong_answer"
    assert exact_match("Titan", ["Titan IIIE"]) == 0.0
    assert best_f1("Titan", ["Titan IIIE", "Delta"]) == pytest.approx(2 / 3)
    assert extract_answer("\n  Final answer: 1999\n") == "1999"
