"""The comparison report and the interval columns of `evaluations`, on hand-made warehouse rows (no model)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from deltalake import write_deltalake

from genenv.config import GenEnvConfig
from genenv.evaluation.bootstrap import paired_difference
from genenv.evaluation.report import (
    Chart,
    Comparison,
    Pair,
    ScoredModel,
    comparison_report,
    line_chart,
    shown,
    shown_path,
)
from genenv.pipeline.run_records import register_run
from genenv.warehouse.query import query
from genenv.warehouse.schemas import now, polars_schema
from genenv.warehouse.store import Warehouse

ABSOLUTE = re.compile(r"(?<![\w.:/~…-])/(tmp|home|work|root|Users|var|private)/")


def _evaluation(batch: str, run_id: str, generation: int | None, category: str, scores: list[float]) -> tuple:
    eval_id = f"{batch}/bfcl/{category}/accuracy"
    value = sum(scores) / len(scores)
    row = {
        "eval_id": eval_id,
        "run_id": run_id,
        "generation": generation,
        "model": "/tmp/somewhere/model",
        "benchmark": "bfcl",
        "category": category,
        "metric": "accuracy",
        "value": value,
        "n": len(scores),
        "evaluated_at": now(),
        "ci_low": max(0.0, value - 0.1),
        "ci_high": min(1.0, value + 0.1),
    }
    items = [
        {
            "eval_id": eval_id,
            "run_id": run_id,
            "benchmark": "bfcl",
            "category": category,
            "item_id": f"{category}_{i}",
            "output": "[]",
            "score": score,
            "error": None,
            "answer_key": None,
        }
        for i, score in enumerate(scores)
    ]
    return row, items


@pytest.fixture
def comparison(tmp_path: Path) -> tuple[Warehouse, Comparison]:
    """Two arms sharing generation 0 (run a; fork b), each scored at generation 2, plus the base model."""
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    config = GenEnvConfig(data_dir=str(tmp_path), run_name="cmp")
    register_run(warehouse, config, "a")
    register_run(warehouse, config, "b", parent=("a", 0))
    for run in ("a", "b"):
        for generation in (0, 1, 2):
            metrics = {"fresh_success": 0.1 * generation, "band_share": 0.5, "heldout_success": 0.3}
            checkpoints = {"agent_checkpoint": "x", "simulator_checkpoint": "y"}
            warehouse.commit_generation(run, generation, **checkpoints, config_hash="h", seed=0, metrics=metrics)
    scores = {
        ("g0", "a", 0): [0.0] * 10 + [1.0] * 10,
        ("genenv g2", "a", 2): [0.0] * 5 + [1.0] * 15,
        ("genenv-random g2", "b", 2): [0.0] * 8 + [1.0] * 12,
        ("base", "base", None): [0.0] * 20,
    }
    rows, items = [], []
    for (label, run, generation), values in scores.items():
        row, its = _evaluation(f"batch-{label.replace(' ', '-')}", run, generation, "simple_python", values)
        rows.append(row)
        items += its
    warehouse.append("evaluations", rows)
    warehouse.append("evaluation_items", items)
    models = [
        ScoredModel("g0", "batch-g0", "a", 0, ("genenv", "genenv-random", "warm-start-only")),
        ScoredModel("genenv g2", "batch-genenv-g2", "a", 2, ("genenv",)),
        ScoredModel("genenv-random g2", "batch-genenv-random-g2", "b", 2, ("genenv-random",)),
        ScoredModel("base", "batch-base", "base", None, ("base",)),
    ]
    return warehouse, Comparison(
        title="GenEnv arms compared",
        command=f"genenv compare --arms genenv,genenv-random,warm-start-only,base --config {tmp_path}/arms.yaml",
        config=config.to_dict(),
        arms=[
            ("genenv", "train", "a", {}),
            ("genenv-random", "train", "b", {"simulator_training": "false"}),
            ("warm-start-only", "generation-0", "a", {"generations": "0"}),
            ("base", "base", None, {"warm_start": "false", "generations": "0"}),
        ],
        shared_run="a",
        models=models,
        pairs=[
            Pair.of("genenv g2", "g0"),
            Pair.of("genenv-random g2", "g0"),
            Pair.of("genenv g2", "genenv-random g2"),
            Pair.of("g0", "base"),
        ],
        items={"simple_python": 20, "parallel": 0},
        limit=None,
    )


def test_report_shows_intervals_paired_differences_and_the_command(comparison, tmp_path: Path) -> None:
    warehouse, spec = comparison
    page = comparison_report(warehouse, spec)
    assert "0.750 [0.650, 0.850]" in page  # genenv g2: value [ci_low, ci_high] from the table
    first = {f"simple_python_{i}": float(i >= 10) for i in range(20)}
    second = {f"simple_python_{i}": float(i >= 5) for i in range(20)}
    diff = paired_difference(first, second)
    assert f"{diff.value:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}]" in page
    for pair in ("genenv g2 − g0", "genenv-random g2 − g0", "genenv g2 − genenv-random g2", "g0 − base"):
        assert pair in page
    assert "--items simple_python=20,parallel=0" in page and "sha256" in page and "2000 resamples" in page
    assert "genenv compare --arms genenv,genenv-random,warm-start-only,base --config" in page
    assert "fork of a at generation 0" in page
    assert "<title>α zone</title>" in page and page.count("<svg") == 7
    assert "stroke-dasharray" in page  # the base model as a reference line
    assert str(tmp_path) not in page and "/tmp/" not in page and not ABSOLUTE.search(page)


def test_no_machine_path_is_shown() -> None:
    assert shown_path("configs/laptop.yaml") == "configs/laptop.yaml"
    assert shown_path(str(Path.cwd() / "configs" / "laptop.yaml")) == "configs/laptop.yaml"
    assert shown_path(str(Path.cwd().parent / "shared" / "benchmarks")) == "../shared/benchmarks"
    assert shown_path("/elsewhere/deep/model-dir") == "…/model-dir"
    text = shown("--config /elsewhere/run/a.yaml --set data_dir=/opt/x/data model=embedded:smollm2 bfcl/simple 0.5")
    assert text == "--config …/a.yaml --set data_dir=…/data model=embedded:smollm2 bfcl/simple 0.5"
    assert shown(text) == text


def test_chart_draws_error_bars_and_reference_lines() -> None:
    chart = Chart(
        "bfcl simple_python: accuracy",
        "accuracy",
        {"genenv": [(0.0, 0.5), (2.0, 0.75)]},
        y_range=(0.0, 1.0),
        ranges={"genenv": [(0.0, 0.4, 0.6), (2.0, 0.65, 0.85)]},
        references={"base": 0.0},
    )
    svg = line_chart(chart)
    assert svg.count("[0.650, 0.850]") == 1 and svg.count("<polyline") == 1 and "stroke-dasharray" in svg


def test_interval_columns_are_added_to_an_older_evaluations_table(tmp_path: Path) -> None:
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    old_schema = {k: v for k, v in polars_schema("evaluations").items() if k not in ("ci_low", "ci_high")}
    old_row, _ = _evaluation("old", "r", 0, "multiple", [1.0, 0.0])
    old = pl.DataFrame([{k: old_row[k] for k in old_schema}], schema=old_schema)
    write_deltalake(warehouse.uri("evaluations"), old.to_arrow(), partition_by=["run_id"])
    new_row, _ = _evaluation("new", "r", 1, "multiple", [1.0, 1.0, 0.0])
    warehouse.append("evaluations", [new_row])
    rows = warehouse.read("evaluations").sort("eval_id")
    assert rows["eval_id"].to_list() == ["new/bfcl/multiple/accuracy", "old/bfcl/multiple/accuracy"]
    assert rows["ci_low"].to_list() == [new_row["ci_low"], None]
    assert rows["ci_high"].to_list() == [new_row["ci_high"], None]
    sql = query(warehouse, "SELECT eval_id, ci_low FROM evaluations ORDER BY eval_id")
    assert sql["ci_low"].to_list() == [new_row["ci_low"], None]
    assert json.loads(warehouse.table("evaluations").schema().to_json())["fields"][-1]["name"] == "ci_high"
