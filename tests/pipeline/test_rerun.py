"""Re-running a generation from its snapshot: same results, a new run, the parent untouched."""

import json
import math
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from genenv.config import ConfigError
from genenv.errors import RerunError
from genenv.pipeline.run_records import register_run
from genenv.tasks.fork import plan_fork
from genenv.validation import validate
from genenv.warehouse.schemas import GENERATION_TABLES, TABLES
from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import assert_same_run, comparable

pytestmark = pytest.mark.slow


def parent_tables(warehouse: Warehouse, run_id: str) -> dict[str, pl.DataFrame]:
    return {table: warehouse.read(table, run_id=run_id) for table in TABLES if table != "evaluation_items"}


def test_rerun_of_generation_2_reproduces_it(finished_run):
    from genenv.flows.rerun import rerun_generation

    config, run_id, warehouse = finished_run
    fork_id = rerun_generation(config.resolved_warehouse_uri, run_id, 2)
    assert fork_id != run_id
    fork = warehouse.run(fork_id)
    assert (fork["parent_run_id"], fork["parent_generation"]) == (run_id, 1)
    assert warehouse.committed(fork_id)["generation"].to_list() == [0, 1, 2]
    assert warehouse.read("trajectories", run_id=fork_id, generation=2).height > 0
    for table in GENERATION_TABLES:
        original = warehouse.read(table, run_id=run_id, generation=2)
        rerun = warehouse.read(table, run_id=fork_id, generation=2)
        assert rerun.height == original.height
        assert_same_run(comparable(rerun, fork_id), comparable(original, run_id))


def test_fork_with_another_alpha_leaves_the_parent_untouched(finished_run):
    from genenv.flows.rerun import rerun_generation

    config, run_id, warehouse = finished_run
    before = parent_tables(warehouse, run_id)
    checkpoints = warehouse.committed(run_id)["agent_checkpoint"].to_list()
    stamps = {p: sorted((f.name, f.stat().st_mtime_ns) for f in Path(p).iterdir()) for p in checkpoints}

    fork_id = rerun_generation(config.resolved_warehouse_uri, run_id, 1, fork="alpha-0.3", overrides={"alpha": "0.3"})

    assert fork_id.startswith("alpha-0-3-")
    after = parent_tables(warehouse, run_id)
    for table, frame in before.items():
        assert_frame_equal(after[table], frame, check_row_order=False)
    assert {p: sorted((f.name, f.stat().st_mtime_ns) for f in Path(p).iterdir()) for p in checkpoints} == stamps
    assert json.loads(warehouse.run(fork_id)["config_json"])["alpha"] == 0.3
    assert warehouse.run(fork_id)["run_name"] == "alpha-0.3"  # the fork's name, not its parent's
    for batch in warehouse.read("batches", run_id=fork_id, generation=1).iter_rows(named=True):
        if batch["p_hat"] is not None:
            assert batch["generator_reward"] == pytest.approx(math.exp(-config.beta * (batch["p_hat"] - 0.3) ** 2))
            assert batch["in_band"] == (abs(batch["p_hat"] - 0.3) <= config.k_min)
    fork_checkpoint = warehouse.committed(fork_id).filter(generation=1)["agent_checkpoint"][0]
    assert fork_id in fork_checkpoint and run_id not in fork_checkpoint


def test_rerun_of_a_missing_generation_writes_nothing(finished_run):
    config, run_id, warehouse = finished_run
    runs_before = warehouse.version("runs")
    for generation in (0, 7):
        with pytest.raises(RerunError, match=f"has no generation {generation} to re-run"):
            plan_fork(warehouse, run_id, generation, None)
    with pytest.raises(RerunError, match="no run 'nope'"):
        plan_fork(warehouse, "nope", 1, None)
    with pytest.raises(ConfigError, match="^alpha: must be in"):  # as the rerun command and flow check it
        validate(plan_fork(warehouse, run_id, 1, {"alpha": "2"}))
    assert warehouse.version("runs") == runs_before


def test_rerun_with_missing_checkpoints_writes_nothing(tmp_path):
    from genenv.config import GenEnvConfig

    warehouse = Warehouse(str(tmp_path / "wh"))
    register_run(warehouse, GenEnvConfig(data_dir=str(tmp_path)), "r")
    for generation in (0, 1):
        warehouse.commit_generation(
            "r",
            generation,
            agent_checkpoint=str(tmp_path / f"gone-{generation}" / "agent"),
            simulator_checkpoint=str(tmp_path / f"gone-{generation}" / "simulator"),
            config_hash="h",
            seed=0,
            metrics={},
        )
    versions = {table: warehouse.version(table) for table in TABLES}
    with pytest.raises(RerunError, match="agent checkpoint of r generation 0 is missing"):
        plan_fork(warehouse, "r", 1, None)
    assert {table: warehouse.version(table) for table in TABLES} == versions
