"""The evaluate flow and `genenv eval` on the tiny model: rows land in `evaluations` and `evaluation_items`,
each score is the mean of its items, and a run's agent is scored at a committed generation."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from safetensors.torch import load_file, save_file

import genenv.tasks.benchmarks as benchmarks
from genenv.cli import main
from genenv.evaluation.api_bank import ApiBank
from genenv.evaluation.bamboogle import Bamboogle
from genenv.evaluation.benchmark_registry import select_items
from genenv.evaluation.bfcl import Bfcl
from genenv.flows.evaluate import evaluate
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.warehouse.checkpoints import checkpoint_uri, publish_adapter
from genenv.warehouse.schemas import now
from genenv.warehouse.store import Warehouse

pytestmark = pytest.mark.usefixtures("prefect_server", "short_answers")


@pytest.fixture
def short_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny model's answers are noise: a few tokens exercise the same code paths."""
    for benchmark in (Bfcl, ApiBank, Bamboogle):
        monkeypatch.setattr(benchmark, "max_new_tokens", 8)


def _rows(warehouse_uri: str, table: str, eval_batch: str) -> pl.DataFrame:
    rows = Warehouse(warehouse_uri).read(table)
    return rows.filter(pl.col("eval_id").str.starts_with(eval_batch + "/"))


def test_base_model_on_every_benchmark(tiny_model_dir: Path, mini_benchmarks: Path, tmp_path: Path) -> None:
    warehouse_uri = str(tmp_path / "warehouse")
    eval_batch = evaluate(
        model=str(tiny_model_dir),
        data_dir=str(mini_benchmarks),
        warehouse_uri=warehouse_uri,
        cache_dir=str(tmp_path),
    )
    scores = _rows(warehouse_uri, "evaluations", eval_batch)
    items = _rows(warehouse_uri, "evaluation_items", eval_batch)
    assert sorted(zip(scores["benchmark"], scores["category"], scores["metric"], strict=True)) == [
        ("api_bank", "level-1", "accuracy"),
        ("bamboogle", "test", "exact_match"),
        ("bamboogle", "test", "f1"),
        ("bfcl", "irrelevance", "accuracy"),
        ("bfcl", "multiple", "accuracy"),
        ("bfcl", "parallel", "accuracy"),
        ("bfcl", "simple_python", "accuracy"),
    ]
    assert set(scores["run_id"]) == {"base"} and scores["generation"].null_count() == len(scores)
    assert set(scores["model"]) == {str(tiny_model_dir)}
    assert dict(zip(scores["category"], scores["n"], strict=False)) == {
        "level-1": 1,
        "test": 2,
        "irrelevance": 1,
        "multiple": 1,
        "parallel": 1,
        "simple_python": 1,
    }
    assert len(items) == 9
    means = items.group_by("eval_id").agg(pl.col("score").mean().alias("mean"))
    joined = scores.join(means, on="eval_id")
    assert len(joined) == len(scores) and (joined["value"] - joined["mean"]).abs().max() < 1e-9
    assert ((scores["ci_low"] <= scores["value"]) & (scores["value"] <= scores["ci_high"])).all()
    f1 = scores.filter(metric="f1").row(0, named=True)
    assert f1["ci_low"] == min(items.filter(eval_id=f1["eval_id"])["score"])  # 2 items: the interval spans both
    assert set(items["item_id"]) == {"simple_python_0", "multiple_0", "parallel_0", "irrelevance_0", "level-1-0"} | {
        "test_0",
        "test_1",
    }


def test_run_agent_at_a_generation_via_the_cli(
    tiny_model_dir: Path, mini_benchmarks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warehouse_uri = str(tmp_path / "warehouse")
    checkpoint = checkpoint_uri(warehouse_uri, "r-eval", 0, "agent")
    PolicyPair.load(tiny_model_dir, LoraSettings()).save_adapter("agent", tmp_path / "saved")
    publish_adapter(tmp_path / "saved", checkpoint)
    warehouse = Warehouse(warehouse_uri)
    warehouse.append("runs", [_run_row("r-eval", str(tiny_model_dir))])
    warehouse.commit_generation(
        "r-eval", 0, agent_checkpoint=str(checkpoint), simulator_checkpoint="", config_hash="h", seed=0, metrics={}
    )
    common = ["--data", str(mini_benchmarks), "--warehouse", warehouse_uri, "--cache-dir", str(tmp_path)]
    target = ["--run", "r-eval", "--generation", "0", "--benchmarks", "bamboogle,api_bank", "--items", "test=1"]
    assert main(["eval", *target, *common]) == 0
    out = capsys.readouterr().out
    assert "bamboogle" in out and "exact_match" in out and "level-1" in out
    assert "95% interval" in out and "2000 resamples" in out
    scores = warehouse.read("evaluations", run_id="r-eval")
    assert scores["generation"].to_list() == [0, 0, 0] and set(scores["n"]) == {1}
    assert set(scores["model"]) == {str(tiny_model_dir)}
    assert scores["ci_low"].null_count() == 0 and (scores["ci_low"] == scores["value"]).all()  # one item each
    items = warehouse.read("evaluation_items", run_id="r-eval")
    # test=1: the Bamboogle item of the seeded sample, not the file's first; level-1 is not named, so all of it.
    (chosen,) = select_items(Bamboogle().load(mini_benchmarks), limit=1)
    assert set(items["item_id"]) == {chosen.item_id, "level-1-0"} and chosen.item_id == "test_1"


def test_an_answer_is_reused_only_for_an_adapter_with_the_same_bytes(
    tiny_model_dir: Path, mini_benchmarks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse_uri = str(tmp_path / "warehouse")
    warehouse = Warehouse(warehouse_uri)
    saved, changed = tmp_path / "saved", tmp_path / "changed"
    PolicyPair.load(tiny_model_dir, LoraSettings()).save_adapter("agent", saved)
    shutil.copytree(saved, changed)
    tensors = load_file(changed / "adapter_model.safetensors")
    name = next(key for key in tensors if "lora_B" in key)
    tensors[name] = tensors[name] + 1e-3
    save_file(tensors, changed / "adapter_model.safetensors")
    for run_id, folder in (("r-first", saved), ("r-copy", saved), ("r-changed", changed)):
        checkpoint = checkpoint_uri(warehouse_uri, run_id, 0, "agent")
        publish_adapter(folder, checkpoint)
        warehouse.append("runs", [_run_row(run_id, str(tiny_model_dir))])
        warehouse.commit_generation(
            run_id, 0, agent_checkpoint=checkpoint, simulator_checkpoint="", config_hash="h", seed=0, metrics={}
        )
    generated: list[int] = []
    generate = benchmarks.run_benchmark

    def counted(backend, scorer, items, progress=None):
        generated.append(len(items))
        return generate(backend, scorer, items, progress)

    monkeypatch.setattr(benchmarks, "run_benchmark", counted)

    def scored(run_id: str) -> tuple[int, pl.DataFrame]:
        generated.clear()
        batch = evaluate(
            run_id=run_id,
            benchmarks=["bfcl"],
            data_dir=str(mini_benchmarks),
            warehouse_uri=warehouse_uri,
            cache_dir=str(tmp_path),
        )
        columns = ["item_id", "output", "score", "answer_key"]
        return sum(generated), _rows(warehouse_uri, "evaluation_items", batch).sort("item_id").select(columns)

    answered, first = scored("r-first")
    assert answered == len(first) == 4 and first["answer_key"].null_count() == 0
    answered, copy = scored("r-copy")  # published apart (another marker), the same bytes
    assert answered == 0 and copy.equals(first)
    answered, other = scored("r-changed")
    assert answered == 4 and set(other["answer_key"]).isdisjoint(first["answer_key"])


def test_cli_refuses_bad_requests_before_loading_anything(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--benchmarks", "bfcl,alfworld", "--data", str(tmp_path)]) == 2
    assert "--benchmarks: unknown ['alfworld']" in capsys.readouterr().err
    assert main(["eval", "--generation", "1", "--data", str(tmp_path)]) == 2
    assert "--generation: needs --run" in capsys.readouterr().err
    assert main(["eval", "--data", str(tmp_path / "nowhere")]) == 2
    assert "--data: folder does not exist" in capsys.readouterr().err
    assert main(["eval", "--vllm-gpu-memory-utilization", "1.5", "--data", str(tmp_path)]) == 2
    assert "--vllm-gpu-memory-utilization: must be in (0, 1] (got 1.5)" in capsys.readouterr().err


def test_cli_refuses_bad_item_sizes(mini_benchmarks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--benchmarks", "bfcl", "--items", "simple=3", "--data", str(mini_benchmarks)]) == 2
    assert "--items: simple=3: no category ['simple'] in ['bfcl']" in capsys.readouterr().err
    assert main(["eval", "--items", "simple_python", "--data", str(mini_benchmarks)]) == 2
    assert "--items: 'simple_python': expected category=N" in capsys.readouterr().err


def _run_row(run_id: str, model: str) -> dict:
    return {
        "run_id": run_id,
        "run_name": "eval",
        "created_at": now(),
        "config_json": '{"precision": "float32"}',
        "config_hash": "h",
        "model": model,
        "domain": "tool_call",
        "parent_run_id": None,
        "parent_generation": None,
        "schema_version": 1,
    }
