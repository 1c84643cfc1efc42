"""The comparison arms are config presets; `compare` runs them from one generation 0 at equal budgets, scores a
fixed item sample with bootstrap intervals, and writes a report."""

import json
import re
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from prefect import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

from genenv.arms import (
    ARMS,
    BASE,
    GENERATION_ZERO,
    TRAIN,
    arm_of,
    arm_overrides,
    generation_zero_differences,
    plan_arms,
)
from genenv.config import ConfigError, GenEnvConfig, check_values, load_config
from genenv.errors import RerunError
from genenv.evaluation.benchmark_registry import select_items
from genenv.evaluation.bfcl import Bfcl
from genenv.evaluation.report import Pair
from genenv.flows.compare import comparison_pairs, models_to_score
from genenv.pipeline.run_records import register_run
from genenv.warehouse.checkpoints import checkpoint_uri, publish_adapter
from genenv.warehouse.schemas import GENERATION_TABLES
from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import small_config

pytestmark = pytest.mark.slow

ABSOLUTE = re.compile(r"(?<![\w.:/~…-])/(tmp|home|work|root|Users|var|private|opt|mnt)/")
ITEMS = {"simple_python": 3, "multiple": 2, "irrelevance": 2, "parallel": 0}


def test_every_arm_is_a_valid_config():
    for arm in ARMS:
        check_values(load_config(None, arm_overrides(arm)))
    with pytest.raises(ConfigError, match="^arms: unknown arm 'nope'"):
        arm_overrides("nope")


def test_a_config_is_tagged_with_the_most_specific_arm_it_matches():
    assert {arm: arm_of(load_config(None, arm_overrides(arm))) for arm in ARMS} == {arm: arm for arm in ARMS}
    assert arm_of(load_config(None, {"generations": "5", "simulator_training": "false"})) == "genenv-random"
    assert arm_of(load_config(None, {"warm_start": "false"})) == "genenv"


def test_arms_share_generation_zero_or_are_refused():
    plans = plan_arms(["genenv", "static", "warm-start-only", "base"], None, {"generations": "3"})
    assert [(p.arm, p.role, p.config.generations) for p in plans] == [
        ("genenv", TRAIN, 3),
        ("static", TRAIN, 3),
        ("warm-start-only", GENERATION_ZERO, 0),
        ("base", BASE, 0),
    ]
    assert [p.config.run_name for p in plans] == [f"genenv-{p.arm}" for p in plans]
    assert generation_zero_differences(plans[0].config, plans[1].config) == []
    assert generation_zero_differences(GenEnvConfig(), GenEnvConfig(warm_start_lr=0.01, alpha=0.3)) == [
        "alpha",
        "warm_start_lr",
    ]
    with pytest.raises(ConfigError, match="named twice"):
        plan_arms(["genenv", "genenv"], None, None)


@pytest.fixture
def short_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny model's answers are noise: a few tokens exercise the same code paths."""
    monkeypatch.setattr(Bfcl, "max_new_tokens", 8)


def test_compare_shares_generation_zero_and_scores_one_item_sample(
    tiny_model_dir, prefect_server, benchmark_dir, short_answers, tmp_path
):
    from genenv.flows.compare import compare

    config_file = tmp_path / "arms.yaml"
    config_file.write_text(json.dumps(small_config(tiny_model_dir, tmp_path).to_dict()))
    report = compare(
        ["genenv", "genenv-random", "static", "warm-start-only", "base"],
        config_file=str(config_file),
        benchmarks=["bfcl"],
        benchmarks_dir=str(benchmark_dir),
        items=ITEMS,
        report=str(tmp_path / "report.html"),
    )
    page = Path(report).read_text()
    uri = str(tmp_path / "warehouse")
    warehouse = Warehouse(uri)
    runs = warehouse.read("runs")
    assert sorted(runs["run_name"]) == ["e2e-genenv", "e2e-genenv-random", "e2e-static"]
    by_arm = {name.removeprefix("e2e-"): run for name, run in runs.select("run_name", "run_id").iter_rows()}
    shared = by_arm["genenv"]

    # One generation 0: the other arms are forks of its snapshot, with its checkpoints and rows, no second warm start.
    zero = warehouse.committed(shared).filter(generation=0).row(0, named=True)
    for arm in ("genenv-random", "static"):
        fork = by_arm[arm]
        assert (warehouse.run(fork)["parent_run_id"], warehouse.run(fork)["parent_generation"]) == (shared, 0)
        committed = warehouse.committed(fork)
        assert committed["generation"].to_list() == [0, 1, 2]
        row = committed.filter(generation=0).row(0, named=True)
        assert (row["agent_checkpoint"], row["simulator_checkpoint"]) == (
            zero["agent_checkpoint"],
            zero["simulator_checkpoint"],
        )
        assert not Path(checkpoint_uri(uri, fork, 0, "agent")).exists()
        assert Path(checkpoint_uri(uri, fork, 1, "agent")).exists()
        assert json.loads(warehouse.run(fork)["config_json"])["generations"] == 2
        for table in GENERATION_TABLES:
            mine = warehouse.read(table, run_id=fork, generation=0).drop("run_id")
            theirs = warehouse.read(table, run_id=shared, generation=0).drop("run_id")
            assert_frame_equal(mine, theirs, check_row_order=False)

    # Each arm's flow runs carry its tag, forks included, so the Runs page can filter by arm.
    with get_client(sync_client=True) as client:
        for arm, run_id in by_arm.items():
            names = [run_id, *(f"{run_id}-g{g}" for g in (1, 2))]
            flow_runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=names)))
            assert flow_runs and all(f"arm:{arm}" in run.tags for run in flow_runs), arm

    # Equal budgets, and each arm's own training.
    config = small_config(tiny_model_dir, tmp_path)
    k = config.rollouts_per_task
    for run_id in by_arm.values():  # each arm draws by one rule: the first round's pool tasks, more while short
        rollouts = warehouse.read("trajectories", run_id=run_id).filter(purpose="pool")
        per_generation = rollouts.group_by("generation").len().sort("generation")
        assert per_generation["generation"].to_list() == [1, 2]
        assert all(n % k == 0 and n >= config.pool_tasks_per_generation * k for n in per_generation["len"])
    assert warehouse.read("tasks", run_id=by_arm["static"], generation=2).is_empty()
    for arm in ("static", "genenv-random"):
        simulator = warehouse.read("training", run_id=by_arm[arm]).filter(role="simulator")
        assert set(simulator["generation"]) == {0}  # the warm start only

    # Scored: generation 0 once, each arm's last generation, the base model; the same items for every model.
    scores = warehouse.read("evaluations")
    scored = scores.select("run_id", "generation").unique()
    assert sorted(scored.iter_rows(), key=str) == sorted(
        [(shared, 0), (shared, 2), (by_arm["genenv-random"], 2), (by_arm["static"], 2), ("base", None)], key=str
    )
    items = warehouse.read("evaluation_items").with_columns(batch=pl.col("eval_id").str.split("/").list.first())
    expected = {item.item_id for item in select_items(Bfcl().load(benchmark_dir), ITEMS)}
    assert len(expected) == 7 and expected != {f"{c}_{i}" for c, n in ITEMS.items() for i in range(n)}
    per_batch = items.group_by("batch").agg(pl.col("item_id").unique())
    assert per_batch.height == 5 and all(set(ids) == expected for ids in per_batch["item_id"])
    assert set(scores["category"]) == {"simple_python", "multiple", "irrelevance"}
    assert scores["ci_low"].null_count() == 0 and scores["ci_high"].null_count() == 0
    assert ((scores["ci_low"] <= scores["value"]) & (scores["value"] <= scores["ci_high"])).all()

    # The report: intervals, paired differences, the command; no path of this machine.
    assert len(re.findall(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", page)) >= 15  # 3 categories x 5 models
    for pair in ("genenv g2 − g0", "static g2 − g0", "genenv g2 − genenv-random g2", "g0 − base"):
        assert pair in page
    assert "--items simple_python=3,multiple=2,irrelevance=2,parallel=0" in page and "2000 resamples" in page
    assert shared in page and by_arm["static"] in page
    assert str(tmp_path) not in page and str(tiny_model_dir) not in page and not ABSOLUTE.search(page)
    assert page.count("<svg") == 9
    assert "<title>α zone</title>" in page and "agent success on generated tasks" in page
    assert "D_env size" in page and "share of simulator outputs that are valid" in page

    # Again from the shared generation 0 with two seeds: seed 0's genenv arm is the shared run itself (continued,
    # nothing re-run or re-scored), seed 1's a new fork; the differences are pooled over the seeds.
    before = {table: warehouse.read(table).height for table in ("runs", "evaluations", "trajectories")}
    again = compare(
        ["genenv", "warm-start-only"],
        config_file=str(config_file),
        benchmarks=["bfcl"],
        benchmarks_dir=str(benchmark_dir),
        items=ITEMS,
        report=str(tmp_path / "seeds.html"),
        seeds=[0, 1],
        from_run=shared,
    )
    runs = warehouse.read("runs")
    assert runs.height == before["runs"] + 1
    (seed_one,) = runs.filter(run_name="e2e-genenv-s1")["run_id"]
    assert json.loads(warehouse.run(seed_one)["config_json"])["seed"] == 1
    assert warehouse.committed(seed_one)["generation"].to_list() == [0, 1, 2]
    new_rollouts = warehouse.read("trajectories").height - before["trajectories"]
    assert new_rollouts == warehouse.read("trajectories", run_id=seed_one).height  # its own, and generation 0's copy
    scored_now = warehouse.read("evaluations").select("run_id", "generation").unique()
    assert scored_now.height == scored.height + 1  # only seed 1's generation 2
    page = Path(again).read_text()
    assert "genenv g2 − g0, 2 seeds pooled" in page and "--seeds 0,1" in page and f"--from-run {shared}" in page


def test_fork_of_generation_zero_is_checked_and_idempotent(tmp_path):
    from genenv.flows.compare import fork_generation_zero

    uri = str(tmp_path / "warehouse")
    warehouse = Warehouse(uri)
    parent = GenEnvConfig(data_dir=str(tmp_path), run_name="p")
    register_run(warehouse, parent, "p")
    pool = [{"run_id": "p", "generation": 0, "pool": "train", "task_id": f"t{i}", "weight": 1.0} for i in range(3)]
    warehouse.append("pool", pool)
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_model.safetensors").write_text("weights")
    checkpoints = {role: checkpoint_uri(uri, "p", 0, role) for role in ("agent", "simulator")}
    for folder in checkpoints.values():
        publish_adapter(tmp_path / "adapter", folder)
    fork = parent.replace(run_name="p-genenv-random", simulator_training=False, generations=5).to_dict()
    with pytest.raises(RerunError, match="no committed generation 0"):
        fork_generation_zero.fn(uri, "p", fork, "f")
    warehouse.commit_generation(
        "p",
        0,
        agent_checkpoint=checkpoints["agent"],
        simulator_checkpoint=checkpoints["simulator"],
        config_hash="h",
        seed=0,
        metrics={"heldout_success": 0.25},
    )
    with pytest.raises(ConfigError, match=r"the fork changes \['warm_start_lr'\]"):
        fork_generation_zero.fn(uri, "p", {**fork, "warm_start_lr": 0.01}, "f")
    assert warehouse.read("runs", run_id="f").is_empty()
    for _ in range(2):  # a retry completes, never duplicates
        assert fork_generation_zero.fn(uri, "p", fork, "f") == "f"
    run = warehouse.run("f")
    assert (run["parent_run_id"], run["parent_generation"]) == ("p", 0)
    assert json.loads(run["config_json"])["generations"] == 5
    assert warehouse.read("pool", run_id="f").drop("run_id").sort("task_id").equals(pl.DataFrame(pool).drop("run_id"))
    (zero,) = warehouse.committed("f").iter_rows(named=True)
    assert (zero["agent_checkpoint"], zero["simulator_checkpoint"]) == (checkpoints["agent"], checkpoints["simulator"])
    assert json.loads(zero["metrics"]) == {"heldout_success": 0.25} and len(warehouse.read("runs")) == 2


def test_generation_zero_and_last_generations_are_scored_by_default():
    plans = plan_arms(["genenv", "genenv-random", "warm-start-only", "base"], None, {"generations": "3"})
    shared = ("genenv", "genenv-random", "warm-start-only")
    assert models_to_score(plans) == [
        ("g0", shared, "g0", 0),
        ("genenv g3", ("genenv",), "genenv", 3),
        ("genenv-random g3", ("genenv-random",), "genenv-random", 3),
        ("base", ("base",), None, None),
    ]
    every = models_to_score(plans, every_generation=True)
    assert [label for label, *_ in every] == ["g0", *[f"{a} g{g}" for a in shared[:2] for g in (1, 2, 3)], "base"]
    assert comparison_pairs(plans) == [
        Pair.of("genenv g3", "g0"),
        Pair.of("genenv-random g3", "g0"),
        Pair.of("genenv g3", "genenv-random g3"),
        Pair.of("g0", "base"),
    ]
    alone = plan_arms(["warm-start-only"], None, None)
    assert models_to_score(alone) == [("g0", ("warm-start-only",), "g0", 0)]
    assert comparison_pairs(alone) == []


def test_several_seeds_run_each_training_arm_once_per_seed_and_pool_the_differences():
    plans = plan_arms(["genenv", "genenv-random", "warm-start-only"], None, {"generations": "2"}, seeds=[3, 4])
    assert [(p.label, p.config.seed, p.config.run_name) for p in plans] == [
        ("genenv s3", 3, "genenv-genenv-s3"),
        ("genenv s4", 4, "genenv-genenv-s4"),
        ("genenv-random s3", 3, "genenv-genenv-random-s3"),
        ("genenv-random s4", 4, "genenv-genenv-random-s4"),
        ("warm-start-only", 0, "genenv-warm-start-only"),
    ]
    assert [label for label, *_ in models_to_score(plans)] == [
        "g0",
        "genenv s3 g2",
        "genenv s4 g2",
        "genenv-random s3 g2",
        "genenv-random s4 g2",
    ]
    pooled = Pair(
        "genenv g2",
        "genenv-random g2",
        (("genenv s3 g2", "genenv-random s3 g2"), ("genenv s4 g2", "genenv-random s4 g2")),
    )
    assert pooled in comparison_pairs(plans)
    assert [p.config.seed for p in plan_arms(["genenv"], None, None, seeds=[7])] == [7]
    with pytest.raises(ConfigError, match="^seeds: need distinct seeds"):
        plan_arms(["genenv"], None, None, seeds=[1, 1])
