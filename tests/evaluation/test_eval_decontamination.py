"""A benchmark item placed in the seed set, or written by the simulator, is rejected as benchmark_overlap."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from genenv.config import GenEnvConfig
from genenv.domains.base import TaskInstance, ValidationContext
from genenv.domains.decontamination import BenchmarkIndex
from genenv.domains.tool_call import ToolCallDomain
from genenv.pipeline.context import GenerationRef
from genenv.runtime.handle import ModelRuntime
from genenv.tasks.seed import seed_pool
from genenv.warehouse.schemas import now
from genenv.warehouse.store import Warehouse


def _benchmark_questions(benchmark_dir: Path) -> list[str]:
    bfcl = (benchmark_dir / "bfcl" / "BFCL_v4_multiple.json").read_text(encoding="utf-8").splitlines()[3]
    api_bank = json.loads((benchmark_dir / "api-bank" / "level-1-api.json").read_text(encoding="utf-8"))[5]
    bamboogle = (benchmark_dir / "bamboogle" / "test.jsonl").read_text(encoding="utf-8").splitlines()[7]
    user_turn = next(line for line in api_bank["input"].splitlines() if line.startswith("User:"))
    return [
        json.loads(bfcl)["question"][0][0]["content"],
        user_turn.removeprefix("User:").strip(),
        json.loads(bamboogle)["question"],
    ]


@pytest.mark.parametrize("which", [0, 1, 2], ids=["bfcl", "api_bank", "bamboogle"])
def test_simulator_output_copying_a_benchmark_item_is_rejected(benchmark_dir: Path, which: int) -> None:
    domain = ToolCallDomain()
    seed = domain.load_seeds()[0]
    context = ValidationContext(is_contaminated=BenchmarkIndex.from_dir(benchmark_dir).contains)
    question = _benchmark_questions(benchmark_dir)[which]
    copied = domain.parse_candidate(f"Request: {question}\nAnswer: {seed.answer}", seed, "sim-1", truncated=False)
    assert copied.task is not None
    assert domain.validate(copied, context).reject_reason == "benchmark_overlap"
    clean = domain.parse_candidate(domain.simulator_target(seed), seed, "sim-2", truncated=False)
    assert domain.validate(clean, context).valid


def test_seed_copying_a_benchmark_item_is_rejected(
    benchmark_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = ToolCallDomain().load_seeds()[:3]
    question = _benchmark_questions(benchmark_dir)[0]
    leaked = dataclasses.replace(shipped[0], task_id="leaked", spec={**shipped[0].spec, "question": question})
    monkeypatch.setattr(ToolCallDomain, "load_seeds", lambda self: [*shipped, leaked])
    warehouse_uri = str(tmp_path / "warehouse")
    config = GenEnvConfig(data_dir=str(tmp_path), warehouse_uri=warehouse_uri, benchmarks_dir=str(benchmark_dir))
    Warehouse(warehouse_uri).append("runs", [_run_row("decontam", config)])
    seed_pool.fn(GenerationRef(warehouse_uri, "decontam", 0, ModelRuntime()))
    tasks = Warehouse(warehouse_uri).read("tasks", run_id="decontam")
    rejected = {row["task_id"]: row["reject_reason"] for row in tasks.iter_rows(named=True) if not row["valid"]}
    assert rejected == {"leaked": "benchmark_overlap"}
    pool = Warehouse(warehouse_uri).read("pool", run_id="decontam")
    assert "leaked" not in pool["task_id"].to_list()


def _run_row(run_id: str, config: GenEnvConfig) -> dict:
    return {
        "run_id": run_id,
        "run_name": "decontamination",
        "created_at": now(),
        "config_json": json.dumps(config.to_dict()),
        "config_hash": "h",
        "model": config.model,
        "domain": config.domain,
        "parent_run_id": None,
        "parent_generation": None,
        "schema_version": 1,
    }


def test_shipped_seeds_do_not_overlap_the_benchmarks(benchmark_dir: Path) -> None:
    index = BenchmarkIndex.from_dir(benchmark_dir)
    seeds: list[TaskInstance] = ToolCallDomain().load_seeds()
    assert not [seed.task_id for seed in seeds if index.contains(seed.spec["question"])]
