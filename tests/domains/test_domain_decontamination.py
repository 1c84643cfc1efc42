"""Benchmark overlap: verbatim and embedded copies are caught, unrelated text is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from genenv.config import GenEnvConfig
from genenv.domains.base import get_domain
from genenv.domains.decontamination import BenchmarkIndex, checked_sets, domain_index


def test_shingles_and_exact_matches() -> None:
    index = BenchmarkIndex.from_texts(["Who was the first person to walk on the moon?", "Capital of Peru?"])
    assert len(index) == 2
    assert index.contains("who was the first person to walk on the MOON")
    assert index.contains("Quiz time! Who was the first person to walk on the moon, and when?")
    assert index.contains("capital of peru")
    assert not index.contains("What is the capital of Peru these days?")
    assert not index.contains("Who was the first person to swim the channel?")
    assert not index.contains("")
    assert not BenchmarkIndex.empty().contains("Capital of Peru?")


def test_bfcl_question_verbatim_and_embedded(benchmark_index: BenchmarkIndex, benchmark_dir: Path) -> None:
    first = (benchmark_dir / "bfcl" / "BFCL_v4_simple_python.json").read_text(encoding="utf-8").splitlines()[0]
    question = json.loads(first)["question"][0][0]["content"]
    assert benchmark_index.contains(question)
    assert benchmark_index.contains(f"Here is my homework. {question} Please show your working too.")
    assert not benchmark_index.contains("Please turn off the porch lights and lock the garage door before midnight.")


def test_api_bank_and_bamboogle_texts(benchmark_index: BenchmarkIndex, benchmark_dir: Path) -> None:
    item = json.loads((benchmark_dir / "api-bank" / "level-1-api.json").read_text(encoding="utf-8"))[0]
    user_turn = next(line for line in item["input"].splitlines() if line.startswith("User:"))
    assert benchmark_index.contains(user_turn.removeprefix("User:"))
    assert benchmark_index.contains(item["expected_output"])
    bamboogle = (benchmark_dir / "bamboogle" / "test.jsonl").read_text(encoding="utf-8").splitlines()[0]
    assert benchmark_index.contains(json.loads(bamboogle)["question"])


def test_domain_reads_every_set(benchmark_dir: Path) -> None:
    texts = list(get_domain("tool_call").benchmark_texts(str(benchmark_dir)))
    assert len(BenchmarkIndex.from_texts(texts)) > 1500


def test_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="benchmark data not found: .*nowhere"):
        BenchmarkIndex.from_dir(tmp_path / "nowhere")


def test_a_folder_without_api_bank_and_bamboogle_checks_what_is_present(tmp_path: Path, benchmark_dir: Path) -> None:
    (tmp_path / "bfcl").symlink_to(benchmark_dir / "bfcl")
    assert checked_sets(tmp_path) == ["bfcl"]
    bfcl_only = BenchmarkIndex.from_dir(tmp_path)
    bamboogle = json.loads((benchmark_dir / "bamboogle" / "test.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert not bfcl_only.contains(bamboogle["question"])
    first = json.loads((benchmark_dir / "bfcl" / "BFCL_v4_simple_python.json").read_text().splitlines()[0])
    assert bfcl_only.contains(first["question"][0][0]["content"])


def test_each_domain_is_checked_against_its_own_benchmarks(benchmark_dir: Path) -> None:
    """The seed and generate stages' index comes from the run's domain: BFCL for tool_call, nothing for text_game."""
    first = json.loads((benchmark_dir / "bfcl" / "BFCL_v4_simple_python.json").read_text().splitlines()[0])
    question = first["question"][0][0]["content"]
    checked = {}
    for name in ("tool_call", "text_game"):
        config = GenEnvConfig(domain=name, benchmarks_dir=str(benchmark_dir))
        domain = get_domain(config.domain, config)
        checked[name] = (domain_index(domain, config.benchmarks_dir), domain.benchmark_sets(config.benchmarks_dir))
    assert checked["tool_call"][0].contains(question)
    assert checked["tool_call"][1] == {"bfcl": None, "api-bank": None, "bamboogle": None}
    assert len(checked["text_game"][0]) == 0 and not checked["text_game"][0].contains(question)
    assert checked["text_game"][1] == {}
