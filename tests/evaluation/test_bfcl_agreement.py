"""Our BFCL checker judges exactly as the official one (bfcl_eval==2026.3.23) on every recorded candidate output.

fixtures/bfcl_agreement.jsonl.gz holds candidate outputs for the simple_python, multiple, parallel and irrelevance
items (gold answers in many spellings and many kinds of wrong ones), each with the verdict of the official decoder,
checker and runner. tests/support/bfcl_agreement.py made it; its docstring has the command. bfcl_eval is not
needed here.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from genenv.domains.tool_call.checker import check

FIXTURE = Path(__file__).parent / "fixtures" / "bfcl_agreement.jsonl.gz"
CATEGORIES = ("simple_python", "multiple", "parallel", "irrelevance")


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def items(benchmark_dir: Path) -> dict[str, dict[str, Any]]:
    """Each item's functions and possible answer (None for irrelevance), by id."""
    folder = benchmark_dir / "bfcl"
    if not folder.is_dir():
        pytest.skip(f"BFCL data not found in {benchmark_dir}")
    items = {}
    for category in CATEGORIES:
        answers = {}
        if category != "irrelevance":
            answers = {
                row["id"]: row["ground_truth"]
                for row in _lines(folder / "possible_answer" / f"BFCL_v4_{category}.json")
            }
        for entry in _lines(folder / f"BFCL_v4_{category}.json"):
            items[entry["id"]] = {"functions": entry["function"], "answers": answers.get(entry["id"])}
    return items


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_corpus_covers_the_categories_and_the_known_disagreements(records: list[dict[str, Any]]) -> None:
    assert len(records) >= 10_000
    by_category = Counter(r["category"] for r in records)
    assert set(by_category) == set(CATEGORIES) and min(by_category.values()) >= 1_000
    classes = {r["class"] for r in records}
    assert {
        "arithmetic_exact",
        "irr_unresolvable_args",
        "tuple_for_array",
        "duplicate_keyword",
        "unary_plus",
    } <= classes
    assert len(classes) >= 50
    assert 0.2 < sum(r["valid"] for r in records) / len(records) < 0.8
    errors = {r["error"] for r in records}
    assert {"ast_decoder:decoder_failed", "irrelevance_error:decoder_success", "type_error:nested"} <= errors


def test_our_checker_agrees_with_official_bfcl(records: list[dict[str, Any]], items: dict[str, dict[str, Any]]) -> None:
    disagreements: dict[str, list[str]] = defaultdict(list)
    for record in records:
        item = items[record["id"]]
        ours = check(record["category"], item["functions"], record["output"], item["answers"])
        if (ours.valid, ours.error) != (record["valid"], record["error"]):
            disagreements[record["class"]].append(
                f"{record['id']} {record['output']!r}: official {record['valid']}/{record['error']}, "
                f"ours {ours.valid}/{ours.error}"
            )
    count = sum(len(found) for found in disagreements.values())
    report = [f"{count} of {len(records)} verdicts differ from official BFCL's"]
    for name, found in sorted(disagreements.items(), key=lambda kv: -len(kv[1])):
        report.append(f"{name}: {len(found)}")
        report += [f"    {line[:300]}" for line in found[:3]]
    assert not disagreements, "\n".join(report)
