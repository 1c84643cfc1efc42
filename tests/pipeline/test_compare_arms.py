"""The comparison arms are config presets; `compare` runs them at equal budgets and writes a report."""

import json
from pathlib import Path

import pytest

from genenv.arms import ARMS, arm_overrides
from genenv.config import ConfigError, load_config
from warehouse.store import Warehouse

pytestmark = pytest.mark.slow


def test_every_arm_is_a_valid_config():
    for arm in ARMS:
        load_config(None, arm_overrides(arm))
    with pytest.raises(ConfigError, match="^arms: unknown arm 'nope'"):
        arm_overrides("nope")


def test_compare_runs_arms_with_equal_budgets_and_reports(finished_run, benchmark_dir, tmp_path):
    from flows.compare import compare

    config, _, _ = finished_run
    config_file = tmp_path / "arms.yaml"
    base = config.replace(data_dir=str(tmp_path), generations=2).to_dict()
    config_file.write_text(json.dumps(base))
    report = compare(
        ["genenv", "static"],
        config_file=str(config_file),
        benchmarks=["bamboogle"],
        benchmarks_dir=str(benchmark_dir),
        limit=2,
        report=str(tmp_path / "report.html"),
    )
    page = Path(report).read_text()
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    runs = warehouse.read("runs")
    assert sorted(runs["run_name"]) == ["e2e-genenv", "e2e-static"]
    by_arm = {name.removeprefix("e2e-"): run for name, run in runs.select("run_name", "run_id").iter_rows()}
    for run_id in by_arm.values():
        assert run_id in page
        assert warehouse.committed(run_id)["generation"].to_list() == [0, 1, 2]
        evaluated = warehouse.read("evaluations", run_id=run_id)
        assert sorted(set(evaluated["generation"])) == [0, 1, 2]
        rollouts = warehouse.read("trajectories", run_id=run_id).filter(purpose="pool")
        assert rollouts.group_by("generation").len().sort("generation")["len"].to_list() == [4, 4]
    static = by_arm["static"]
    assert warehouse.read("tasks", run_id=static, generation=2).is_empty()
    assert warehouse.read("training", run_id=static).filter(role="simulator", phase="rwr").is_empty()
    assert page.count("<svg") >= 6
    assert "<title>α zone</title>" in page and "agent success on generated tasks" in page
