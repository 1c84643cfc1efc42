"""Evaluation benchmarks for decontamination tests: ../shared/benchmarks next to the repo, or $GENENV_BENCHMARKS_DIR."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from domains.decontamination import BenchmarkIndex


def benchmarks_dir() -> Path | None:
    candidates = [Path(__file__).resolve().parents[3] / "shared" / "benchmarks"]
    if os.environ.get("GENENV_BENCHMARKS_DIR"):
        candidates.append(Path(os.environ["GENENV_BENCHMARKS_DIR"]))
    return next((path for path in candidates if path.is_dir()), None)


@pytest.fixture(scope="session")
def benchmark_dir() -> Path:
    path = benchmarks_dir()
    if path is None:
        pytest.skip("benchmark data not found: no ../shared/benchmarks and GENENV_BENCHMARKS_DIR is unset")
    return path


@pytest.fixture(scope="session")
def benchmark_index(benchmark_dir: Path) -> BenchmarkIndex:
    return BenchmarkIndex.from_dir(benchmark_dir)
