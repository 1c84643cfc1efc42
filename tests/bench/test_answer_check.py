"""bench/answer_check.py's split of a labelled census by the pools its tasks joined: what d_train_needs_agreement is
measured by, so a wrong count would misreport the rule."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "answer_check.py"


def test_a_census_is_split_by_the_pools_its_tasks_joined(capsys) -> None:
    spec = importlib.util.spec_from_file_location("answer_check_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = [
        {"task_id": "a", "correct": True},
        {"task_id": "b", "correct": False},
        {"task_id": "c", "correct": True},
        {"task_id": "d", "correct": False},
    ]
    module.by_pool(rows, kept=rows[:1] + rows[2:], members={"train": {"a", "b"}, "env": {"a"}})
    assert capsys.readouterr().out.splitlines() == [
        "  joined D_train: 2, correct 1 (50.0%)",
        "  kept out of D_train: 2, correct 1 (50.0%)",
        "  joined D_env: 1, correct 1 (100.0%)",
        "  joined D_train, passes the check: 1, correct 1 (100.0%)",
    ]
