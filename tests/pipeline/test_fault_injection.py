"""Kill the flow process (SIGKILL) inside each stage and between stages, resume, and compare with a run
that was never interrupted."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from genenv.warehouse.schemas import GENERATION_TABLES
from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import assert_same_run, comparable

pytestmark = pytest.mark.slow

# In the order the pipeline reaches them: each resume runs until the next one. A stage's `before` point is here only
# where no `end` point precedes it in its generation: between one stage's end and the next one's start the flow
# writes nothing (flows/generation.py calls them in a row), so a kill there leaves what a kill at the end leaves.
CRASH_POINTS = [
    "g0:end:seed-pool",
    "g0:warm-start:epoch",
    "g0:end:warm-start",
    "g0:end:evaluate-heldout",
    "g1:before:generate",
    "g1:generate:generated",
    "g1:end:generate",
    "g1:end:rollout",
    "g1:end:verify",
    "g1:rewards:between-tables",
    "g1:end:rewards",
    "g1:end:grow-pools",
    "g1:finetune:saved",
    "g1:end:finetune",
    "g1:end:evaluate-heldout",
    "g1:end:commit",
]


def evolve_in_subprocess(config_file: Path, run_id: str, crash_at: str | None) -> int:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "GENENV_CRASH_AT": crash_at or ""}
    command = [sys.executable, "-m", "genenv.cli", "evolve", "--config", str(config_file), "--run-id", run_id]
    return subprocess.run(command, env=env, capture_output=True, timeout=300).returncode


GROUP_COUNTS = ("groups_drawn", "groups_trained", "drawn_kinds", "trained_kinds", "trained_at_edge", "batch_short")


def _group_counts(warehouse: Warehouse, run_id: str) -> dict:
    metrics = json.loads(warehouse.committed(run_id).filter(generation=1)["metrics"][0])
    return {key: metrics.get(key) for key in GROUP_COUNTS}


def test_killed_anywhere_the_run_resumes_to_the_same_tables(finished_run, tmp_path):
    config, reference_run, reference = finished_run
    faulty = config.replace(data_dir=str(tmp_path), generations=1)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(faulty.to_dict()))
    run_id = "faulty-run"

    for point in CRASH_POINTS:
        assert evolve_in_subprocess(config_file, run_id, point) == -signal.SIGKILL, point
    assert evolve_in_subprocess(config_file, run_id, None) == 0

    warehouse = Warehouse(faulty.resolved_warehouse_uri)
    assert warehouse.committed(run_id)["generation"].to_list() == [0, 1]
    for table in GENERATION_TABLES:
        resumed = warehouse.read(table, run_id=run_id)
        uninterrupted = reference.read(table, run_id=reference_run).filter(pl.col("generation") <= 1)
        assert_same_run(comparable(resumed, run_id), comparable(uninterrupted, reference_run))
    # the trained groups finetune recorded, read by the commit whether or not finetune ran in the same process
    assert _group_counts(warehouse, run_id) == _group_counts(reference, reference_run)
    for row in warehouse.committed(run_id).iter_rows(named=True):
        for checkpoint in (row["agent_checkpoint"], row["simulator_checkpoint"]):
            assert (Path(checkpoint) / "adapter_config.json").is_file()
    for table in GENERATION_TABLES:
        delta = warehouse.table(table)  # None: a table this domain never writes (turns)
        assert delta is None or all(Path(uri.removeprefix("file://")).is_file() for uri in delta.file_uris())


def test_two_writers_on_one_run_one_fails_at_once_and_the_tables_are_a_single_runs(finished_run, tmp_path):
    """The probe's defect: two `genenv evolve --run-id R` at once both wrote every generation. Now the second finds
    the first's lease, exits 2 naming it, and the run's tables are those of one uninterrupted run."""
    from prefect.settings import PREFECT_API_URL

    config, reference_run, reference = finished_run
    settings = config.replace(data_dir=str(tmp_path), generations=1)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(settings.to_dict()))
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "GENENV_CRASH_AT": ""}
    command = [sys.executable, "-m", "genenv.cli", "evolve", "--config", str(config_file), "--run-id", "shared-run"]
    writers = [subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = sorted((writer.wait(timeout=300), writer.stderr.read(), writer.pid) for writer in writers)
    (ok, _, winner), (refused, message, _) = outcomes
    assert (ok, refused) == (0, 2)
    assert f"genenv: run shared-run is being written by process {winner} on" in message
    assert "Traceback" not in message and len(message.splitlines()) <= 12, message  # Prefect's lines, then the reason

    warehouse = Warehouse(settings.resolved_warehouse_uri)
    assert warehouse.committed("shared-run")["generation"].to_list() == [0, 1]
    assert warehouse.read("runs", run_id="shared-run").height == 1
    for table in GENERATION_TABLES:
        written = warehouse.read(table, run_id="shared-run")
        uninterrupted = reference.read(table, run_id=reference_run).filter(pl.col("generation") <= 1)
        assert_same_run(comparable(written, "shared-run"), comparable(uninterrupted, reference_run))
