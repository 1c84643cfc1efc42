"""Reading the benchmark files (where each comes from: genenv/benchmark_data.py).

<bfcl>/BFCL_v4_<category>.json                   one JSON object a line: id, question, function
<bfcl>/possible_answer/BFCL_v4_<category>.json   one a line: id, ground_truth (none for irrelevance)
<data_dir>/api-bank/level-1-api.json             a JSON list: instruction, input, expected_output
<data_dir>/bamboogle/test.jsonl                  one a line: id, question, golden_answers

<bfcl> is the bfcl-eval package's data folder, or <data_dir>/bfcl when the folder holds a copy.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from genenv.benchmark_data import require_bfcl_dir, require_folder_file


def required(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"benchmark data not found: {path}")
    return path


def json_lines(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The first `limit` objects of a one-object-a-line file (all when limit is None)."""
    with required(path).open(encoding="utf-8") as lines:
        return list(itertools.islice((json.loads(line) for line in lines if line.strip()), limit))


def bfcl_entries(data_dir: Path | None, category: str, limit: int | None = None) -> list[dict[str, Any]]:
    """BFCL entries of one category, each with its `ground_truth` joined by id (None for irrelevance)."""
    folder = require_bfcl_dir(data_dir)
    entries = json_lines(folder / f"BFCL_v4_{category}.json", limit)
    answers_path = folder / "possible_answer" / f"BFCL_v4_{category}.json"
    answers = {row["id"]: row["ground_truth"] for row in json_lines(answers_path)} if answers_path.exists() else {}
    if not answers and "irrelevance" not in category:
        raise FileNotFoundError(f"benchmark data not found: {answers_path}")
    for entry in entries:
        if answers and entry["id"] not in answers:
            raise ValueError(f"{answers_path} has no ground truth for {entry['id']}")
        entry["ground_truth"] = answers.get(entry["id"])
    return entries


def api_bank_level1(data_dir: Path | None, limit: int | None = None) -> list[dict[str, Any]]:
    items = json.loads(require_folder_file(data_dir, "api-bank").read_text(encoding="utf-8"))
    return items[:limit] if limit is not None else items


def bamboogle(data_dir: Path | None, limit: int | None = None) -> list[dict[str, Any]]:
    return json_lines(require_folder_file(data_dir, "bamboogle"), limit)
