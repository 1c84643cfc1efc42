"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Each pytest-xdist worker gets its share of the cores (tests/support/workers.py), set before torch is imported and
# inherited by the processes a test starts: two workers each spinning as many OpenMP threads as there are cores would
# make every parallel region wait for a thread whose core the other worker holds (docs/performance.md, contention).
# A count set here also keeps the product's thread governor (models/cpu/threads.py) out of every test but its own:
# a test's numbers never depend on what else the machine was doing.
# A worker sets its share whatever it inherited: the controlling process (no worker count) sets the whole machine's,
# and its workers start with that in their environment.
WORKERS = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
if WORKERS or "OMP_NUM_THREADS" not in os.environ:
    share = max(1, (os.cpu_count() or 1) // int(WORKERS or "1"))
    os.environ["OMP_NUM_THREADS"] = str(share)
    import torch

    torch.set_num_threads(share)  # in case a plugin imported torch before this file

from tests.support.tiny_model import build_tiny_model  # noqa: E402 (imports torch: after the thread count)

# Ray clusters of the tests live on 127.0.0.1, which Ray on Linux rewrites to the machine's network address unless
# told the cluster is one machine (runtime/pool.py: keep_loopback); set before any test imports ray.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama with its tokenizer, built once per session (about 0.1 s)."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model") / "model")


@pytest.fixture(scope="session")
def benchmark_dir() -> Path:
    """../shared/benchmarks next to the repo, or $GENENV_BENCHMARKS_DIR; tests that need it skip without it."""
    candidates = [Path(__file__).resolve().parents[2] / "shared" / "benchmarks"]
    if os.environ.get("GENENV_BENCHMARKS_DIR"):
        candidates.append(Path(os.environ["GENENV_BENCHMARKS_DIR"]))
    path = next((p for p in candidates if p.is_dir()), None)
    if path is None:
        pytest.skip("benchmark data not found: no ../shared/benchmarks and GENENV_BENCHMARKS_DIR is unset")
    return path


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory: pytest.TempPathFactory):
    """One real temporary Prefect server (SQLite, loopback) for the whole session."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield
