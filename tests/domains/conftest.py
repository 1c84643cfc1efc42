"""The decontamination index over the evaluation benchmarks (`benchmark_dir` comes from tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from genenv.domains.decontamination import BenchmarkIndex


@pytest.fixture(scope="session")
def benchmark_index(benchmark_dir: Path) -> BenchmarkIndex:
    return BenchmarkIndex.from_dir(benchmark_dir)
