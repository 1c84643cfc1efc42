"""The sentence encoder's label check: a function forced onto a request no offered function serves is rejected as
`function_unrelated`; the shipped seeds and requests the catalog samples are not; without an encoder the rules
alone decide."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from genenv.config import ConfigError, GenEnvConfig
from genenv.domains.base import Candidate, TaskInstance, ValidationContext, get_domain
from genenv.domains.tool_call.calls import Call, parse_calls
from genenv.domains.tool_call.catalog import CATALOG
from genenv.domains.tool_call.relevance import FIT_MIN
from genenv.models.sentence import check_sentence_model

FORCED = [  # wrong labels of generations 5-8 of the issue-46 comparison (bench/data/labelled_c45_g5_g8_tasks.jsonl)
    ("Can I get a cup of tea from the library?", '[sports.fixtures(team="library")]', ["sports.fixtures"]),
    (
        "I just did yoga for 105 minutes, record it.",
        '[shopping_list.add_items(items=["yoga"])]',
        ["shopping_list.add_items"],
    ),
    (
        "What's new in home security in San Francisco?",
        '[weather.get_forecast(city="San Francisco")]',
        ["weather.get_forecast"],
    ),
]


@pytest.fixture(scope="module")
def domain(tmp_path_factory: pytest.TempPathFactory):
    return get_domain("tool_call", GenEnvConfig(data_dir=str(tmp_path_factory.mktemp("data"))))


def _task(question: str, answer: str, offered: list[str]) -> TaskInstance:
    return TaskInstance("g1/v0", {"functions": [CATALOG[n].schema for n in offered], "question": question}, answer, "")


@pytest.mark.parametrize(("question", "answer", "offered"), FORCED)
def test_a_function_forced_onto_a_request_it_does_not_serve_is_rejected(domain, question, answer, offered) -> None:
    task = _task(question, answer, offered)
    assert domain.validate(Candidate(raw="", task=task), ValidationContext()).reject_reason == "function_unrelated"
    rules_only = get_domain("tool_call", GenEnvConfig(relevance_model=""))
    assert rules_only.validate(Candidate(raw="", task=task), ValidationContext()).reject_reason is None


def test_the_shipped_seeds_and_catalog_requests_fit_their_functions(domain) -> None:
    """Not one seed, and at most 1% of 600 requests the catalog writes (none today), falls below FIT_MIN."""
    seeds = domain.load_seeds()
    fits = [domain.relevance.fit(parse_calls(s.answer), s.spec["functions"], s.spec["question"]) for s in seeds]
    assert min(fits) >= FIT_MIN
    rng, low = random.Random(7), 0
    for name, entry in sorted(CATALOG.items()):
        for _ in range(10):
            question, arguments = entry.make(rng)
            low += domain.relevance.fit([Call(name, arguments)], [entry.schema], question) < FIT_MIN
    assert low <= 6


def test_a_folder_that_is_no_model_is_refused_before_a_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="relevance_model: folder .* has no config.json"):
        check_sentence_model(str(tmp_path), tmp_path)
