"""Where benchmark data comes from: BFCL from the bfcl-eval package, API-Bank and Bamboogle from a folder or skipped."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from genenv.benchmark_data import bfcl_dir
from genenv.config import load_config
from genenv.evaluation.benchmark_registry import get_benchmark, present_benchmarks
from genenv.pipeline.context import GenerationRef
from genenv.pipeline.run_records import register_run
from genenv.runtime.handle import ModelRuntime
from genenv.tasks.seed import seed_pool
from genenv.warehouse.store import Warehouse

REPO = Path(__file__).resolve().parents[2]
CATEGORIES = ("simple_python", "multiple", "parallel", "irrelevance")


@pytest.fixture
def package_bfcl() -> Path:
    found = bfcl_dir(None)
    if found is None:
        pytest.skip("bfcl-eval is not installed (the Makefile installs it: pip install --no-deps bfcl-eval==2026.3.23)")
    return found


def test_package_data_is_the_benchmark_we_score(package_bfcl: Path, benchmark_dir: Path) -> None:
    for category in CATEGORIES:
        name = f"BFCL_v4_{category}.json"
        assert (package_bfcl / name).read_bytes() == (benchmark_dir / "bfcl" / name).read_bytes(), name
    bfcl = get_benchmark("bfcl")
    from_package, from_folder = bfcl.load(None), bfcl.load(benchmark_dir)
    assert len(from_package) == 1040
    assert [(i.item_id, i.messages, i.reference) for i in from_package] == [
        (i.item_id, i.messages, i.reference) for i in from_folder
    ]


def test_without_a_folder_only_bfcl_runs_and_the_others_say_what_to_supply(package_bfcl: Path) -> None:
    present, skipped = present_benchmarks(["bfcl", "api_bank", "bamboogle"], None)
    assert present == ["bfcl"]
    assert skipped == [
        "skipping api_bank: api-bank: no folder given; supply a folder holding api-bank/level-1-api.json "
        "(API-Bank level-1 test data (AlibabaResearch/DAMO-ConvAI, api-bank/), as one JSON list)",
        "skipping bamboogle: bamboogle: no folder given; supply a folder holding bamboogle/test.jsonl "
        "(the Bamboogle test split as FlashRAG publishes it (one JSON object a line))",
    ]
    with pytest.raises(FileNotFoundError, match="api-bank/level-1-api.json"):
        get_benchmark("api_bank").load(None)


def test_a_folder_with_the_other_sets_runs_them_all(package_bfcl: Path, benchmark_dir: Path, tmp_path: Path) -> None:
    for name in ("api-bank", "bamboogle"):
        shutil.copytree(benchmark_dir / name, tmp_path / name)
    present, skipped = present_benchmarks(["bfcl", "api_bank", "bamboogle"], tmp_path)
    assert (present, skipped) == (["bfcl", "api_bank", "bamboogle"], [])


def test_a_checkout_without_shared_runs_the_demo_config_and_seed_stage(
    package_bfcl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "configs").mkdir(parents=True)
    shutil.copy(REPO / "configs" / "demo.yaml", checkout / "configs" / "demo.yaml")
    monkeypatch.chdir(checkout)
    assert not (tmp_path / "shared").exists()
    config = load_config("configs/demo.yaml", {"data_dir": str(tmp_path / "data")})
    warehouse = Warehouse(config.resolved_warehouse_uri)
    register_run(warehouse, config, "no-shared")
    with caplog.at_level(logging.INFO):
        result = seed_pool.fn(GenerationRef(config.resolved_warehouse_uri, "no-shared", 0, ModelRuntime()))
    assert result.counts["train"] > 200 and result.counts["heldout"] > 50
    line = next(r.getMessage() for r in caplog.records if "decontaminating against" in r.getMessage())
    assert line.startswith("decontaminating against: bfcl; not checked, api-bank: no folder given")
    assert "not checked, bamboogle: no folder given" in line
