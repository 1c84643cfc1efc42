"""Fixtures for the evaluation tests: a small benchmark folder in the shared layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _write_lines(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


@pytest.fixture(scope="session")
def mini_benchmarks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's own copy in the shared layout, one short item per category: quick prompts for the model tests."""
    root = tmp_path_factory.mktemp("benchmarks")
    area = {
        "name": "area",
        "description": "Area of a square.",
        "parameters": {"type": "dict", "properties": {"side": {"type": "integer"}}, "required": ["side"]},
    }
    answer = [{"area": {"side": [2]}}]
    for category, question, ground_truth in [
        ("simple_python", "Area of a square of side 2?", answer),
        ("multiple", "Area of a square of side 2?", answer),
        ("parallel", "Areas of squares of sides 2 and 3?", [*answer, {"area": {"side": [3]}}]),
        ("irrelevance", "Who wrote Hamlet?", None),
    ]:
        entry = {"id": f"{category}_0", "question": [[{"role": "user", "content": question}]], "function": [area]}
        _write_lines(root / "bfcl" / f"BFCL_v4_{category}.json", [entry])
        if ground_truth is not None:
            truth = {"id": f"{category}_0", "ground_truth": ground_truth}
            _write_lines(root / "bfcl" / "possible_answer" / f"BFCL_v4_{category}.json", [truth])
    api_item = {
        "instruction": "Generate an API request in the format of [ApiName(key1='value1', ...)].",
        "input": "User: Cancel appointment 42.\nGenerate API Request:\n",
        "expected_output": "API-Request: [CancelRegistration(appointment_id='42')]",
    }
    (root / "api-bank").mkdir()
    (root / "api-bank" / "level-1-api.json").write_text(json.dumps([api_item]), encoding="utf-8")
    questions = [("test_0", "Capital of France?", ["Paris"]), ("test_1", "Two plus two?", ["4", "four"])]
    _write_lines(
        root / "bamboogle" / "test.jsonl", [{"id": i, "question": q, "golden_answers": a} for i, q, a in questions]
    )
    return root
