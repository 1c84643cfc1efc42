"""Two generations of the real evolve flow on a tiny random model, through a real Prefect server."""

import json
import math
import statistics
from pathlib import Path

import polars as pl
import pytest

from genenv.curriculum.batches import simulator_advantages
from genenv.curriculum.pools import GROUP_KINDS, abstentions_for_share
from genenv.domains.base import REPEAT
from genenv.pipeline.context import GenerationRef
from genenv.pipeline.staging import read_staged, staging_path
from genenv.runtime.handle import ModelRuntime
from genenv.tasks.commit import summary_line
from genenv.warehouse.query import query
from genenv.warehouse.schemas import GENERATION_TABLES

pytestmark = pytest.mark.slow


def test_every_generation_is_committed_with_its_snapshot(finished_run):
    config, run_id, warehouse = finished_run
    generations = warehouse.committed(run_id)
    assert generations["generation"].to_list() == [0, 1, 2]
    for row in generations.iter_rows(named=True):
        assert Path(row["agent_checkpoint"]).is_dir() and Path(row["simulator_checkpoint"]).is_dir()
        versions = json.loads(row["table_versions"])
        assert set(versions) == set(GENERATION_TABLES)
        metrics = json.loads(row["metrics"])
        assert {"valid_rate", "mean_p_hat", "band_share", "heldout_success"} <= set(metrics)
    assert warehouse.read("runs", run_id=run_id).height == 1  # other tests fork it into the same warehouse


def test_tasks_keep_every_simulator_output_with_a_reason(finished_run):
    config, run_id, warehouse = finished_run
    from genenv.domains.tool_call.domain import REJECT_REASONS

    tasks = warehouse.read("tasks", run_id=run_id)
    seeds = tasks.filter(generation=0)
    assert seeds["origin"].unique().to_list() == ["seed"] and seeds.height >= 200
    for g in (1, 2):
        fresh = tasks.filter(generation=g, origin="simulator")
        assert fresh.height == config.seeds_per_generation * config.variations_per_seed
        assert fresh["raw_output"].null_count() == 0
        assert (fresh["valid"] == fresh["reject_reason"].is_null()).all()
        assert set(fresh["reject_reason"].drop_nulls()) <= {*REJECT_REASONS, REPEAT}
    assert tasks["task_id"].n_unique() == tasks.height


def test_trajectories_match_the_rollout_plan(finished_run):
    config, run_id, warehouse = finished_run
    tasks = warehouse.read("tasks", run_id=run_id)
    trajectories = warehouse.read("trajectories", run_id=run_id)
    k = config.rollouts_per_task
    heldout_seeds = tasks.filter(heldout=True, valid=True).height
    for g in (0, 1, 2):
        t = trajectories.filter(generation=g)
        assert t.filter(purpose="heldout").height == min(config.max_heldout, heldout_seeds)
        if g == 0:
            assert set(t["purpose"]) == {"heldout"}
            continue
        valid_fresh = tasks.filter(generation=g, valid=True, origin="simulator").height
        assert t.filter(purpose="fresh").height == valid_fresh * max(k, config.p_hat_rollouts)
        pool = t.filter(purpose="pool")  # the first round's draw, and more while the batch lacked groups with a spread
        assert pool.height % k == 0 and pool.height >= config.pool_tasks_per_generation * k
        assert (pool.group_by("task_id").len()["len"] == k).all()
        abstentions = tasks.filter(generation=g, origin="abstention")
        assert abstentions.height >= 1 and (abstentions["answer"] == "[]").all()
        assert t.filter(purpose="abstention").height <= abstentions.height * k
    assert trajectories["trajectory_id"].n_unique() == trajectories.height
    assert ((trajectories["reward"] >= 0) & (trajectories["reward"] <= 1)).all()
    assert (trajectories["solved"] == (trajectories["reward"] >= config.solved_threshold)).all()
    assert (trajectories["prompt_tokens"] == trajectories["prompt_ids"].list.len()).all()
    assert (trajectories["completion_tokens"] <= config.agent_max_new_tokens).all()
    heldout_ids = set(tasks.filter(heldout=True)["task_id"])
    assert set(trajectories.filter(purpose="heldout")["task_id"]) <= heldout_ids
    trained_on = set(trajectories.filter(pl.col("purpose") != "heldout")["task_id"])
    assert not trained_on & heldout_ids


def test_every_simulator_output_is_scored_by_its_own_rollouts(finished_run):
    """reward_scope=task: one `batches` row per output; p̂ is the share of that task's fresh rollouts solved."""
    config, run_id, warehouse = finished_run
    tasks = warehouse.read("tasks", run_id=run_id).filter(origin="simulator")
    units = warehouse.read("batches", run_id=run_id)
    fresh = warehouse.read("trajectories", run_id=run_id).filter(purpose="fresh")
    success = dict(fresh.group_by("task_id").agg(pl.col("solved").cast(pl.Float64).mean()).iter_rows())
    assert sorted(units["task_id"]) == sorted(tasks["task_id"])
    outputs = tasks.select("task_id", "batch_id", "valid", "reject_reason")
    for u in units.join(outputs, on=["task_id", "batch_id"]).iter_rows(named=True):
        repeat = u["reject_reason"] == REPEAT  # shares the verdict of the same output written before it
        assert u["n_variations"] == 1 and u["n_valid"] == int(u["valid"] or repeat)
        if repeat:
            assert u["p_hat"] in success.values()
        elif not u["valid"]:
            assert (
                u["p_hat"] is None and u["generator_reward"] == config.simulator_invalid_advantage and not u["in_band"]
            )
        else:
            assert u["p_hat"] == pytest.approx(success[u["task_id"]])
            assert u["generator_reward"] == pytest.approx(math.exp(-config.beta * (u["p_hat"] - config.alpha) ** 2))
            assert u["in_band"] == (abs(u["p_hat"] - config.alpha) <= config.k_min)
        assert (u["rwr_weight"] > 0) == u["in_band"]


def test_pools_grow_with_valid_tasks_only(finished_run):
    config, run_id, warehouse = finished_run
    tasks = warehouse.read("tasks", run_id=run_id)
    pool = warehouse.read("pool", run_id=run_id)
    train = pool.filter(pool="train")
    seeds = tasks.filter(generation=0, heldout=False, valid=True)
    assert sorted(train.filter(generation=0)["task_id"]) == sorted(seeds["task_id"])
    for g in (1, 2):
        valid = tasks.filter(generation=g, valid=True, origin="simulator")  # built abstention tasks stay out
        assert sorted(train.filter(generation=g)["task_id"]) == sorted(valid["task_id"])
        metrics = json.loads(warehouse.committed(run_id).filter(generation=g)["metrics"][0])
        assert metrics["d_train_added"] == valid.height and "d_train_unagreed" not in metrics  # the paper's rule
        assert f"D_train {metrics['d_train']} (+{valid.height}) D_env" in summary_line(g, metrics)
    assert train["task_id"].n_unique() == train.height
    kept = warehouse.read("batches", run_id=run_id).filter(in_band=True)
    env = pool.filter(pool="env")
    assert sorted(env["task_id"]) == sorted(kept["task_id"])
    assert dict(env.select("task_id", "weight").iter_rows()) == dict(kept.select("task_id", "rwr_weight").iter_rows())


def test_both_models_trained_every_generation(finished_run):
    config, run_id, warehouse = finished_run
    training = warehouse.read("training", run_id=run_id)
    warm = training.filter(generation=0)
    assert set(warm["role"]) == {"agent", "simulator"} and set(warm["phase"]) == {"warm_start"}
    trajectories = warehouse.read("trajectories", run_id=run_id)
    for g in (1, 2):
        grpo = training.filter(generation=g, role="agent")
        groups = trajectories.filter(
            pl.col("generation") == g, pl.col("purpose").is_in(["fresh", "pool", "abstention"])
        )
        rewards = groups.group_by("task_id").agg(pl.col("reward").n_unique().alias("distinct"))
        spread = set(rewards.filter(pl.col("distinct") > 1)["task_id"])
        metrics = json.loads(warehouse.committed(run_id).filter(generation=g)["metrics"][0])
        assert metrics["groups_drawn"] == groups["task_id"].n_unique() and metrics["groups_trained"] <= len(spread)
        # the groups finetune recorded as trained, and their share at the agent's edge over all their answers
        record = read_staged(
            staging_path(GenerationRef(config.resolved_warehouse_uri, run_id, g, ModelRuntime()), "agent-groups")
        )
        trained = record.filter("trained")["task_id"].to_list()
        assert len(trained) == metrics["groups_trained"] and record.height == metrics["groups_drawn"]
        solved = groups.group_by("task_id").agg((pl.col("reward") >= config.solved_threshold).mean().alias("s"))
        edge = set(solved.filter(pl.col("s").is_between(0.2, 0.8))["task_id"])
        if trained:
            assert metrics["trained_at_edge"] == pytest.approx(round(len(edge & set(trained)) / len(trained), 4))
            assert f"at the edge {100 * metrics['trained_at_edge']:.0f}%" in summary_line(g, metrics)
        rows = metrics["groups_trained"] * config.rollouts_per_task  # dynamic sampling: groups whose rewards differ
        steps = max(config.agent_epochs * math.ceil(rows / config.agent_minibatch_size), 1)  # none: one skipped
        assert grpo.height == steps and set(grpo["phase"]) <= {"grpo"}
        assert grpo["grad_norm"].null_count() == 0 and grpo["zero_spread_share"].null_count() == 0
        assert ((grpo["clip_ratio"] >= 0) & (grpo["clip_ratio"] <= 1)).all()
    assert training["loss"].is_finite().all()


def test_the_simulator_learns_from_each_seeds_variations(finished_run):
    """simulator_update=grpo: every output of the generation is a row, the seed's variations a group; the logged
    weight spread is that of the advantages of the `batches` rewards, normalised among each group's scored outputs,
    the rejected ones at simulator_invalid_advantage."""
    config, run_id, warehouse = finished_run
    tasks = warehouse.read("tasks", run_id=run_id).filter(origin="simulator")
    assert tasks["simulator_completion_ids"].null_count() == tasks["simulator_prompt_ids"].null_count() == 0
    training = warehouse.read("training", run_id=run_id).filter(role="simulator")
    for g in (1, 2):
        steps = training.filter(generation=g).sort("step")
        units = warehouse.read("batches", run_id=run_id, generation=g).sort("task_id")
        outputs = units.height
        assert set(steps["phase"]) == {"grpo"}
        assert steps.height == config.simulator_epochs * math.ceil(outputs / config.simulator_minibatch_size)
        rewards = [None if p is None else r for p, r in units.select("p_hat", "generator_reward").iter_rows()]
        advantages = simulator_advantages(units["batch_id"].to_list(), rewards, config.simulator_invalid_advantage)
        assert steps["weight_min"].to_list() == pytest.approx([min(advantages)] * steps.height)
        assert steps["weight_max"].to_list() == pytest.approx([max(advantages)] * steps.height)
        assert steps["weight_median"][0] == pytest.approx(statistics.median(advantages))
        metrics = json.loads(warehouse.committed(run_id).filter(generation=g)["metrics"][0])
        assert metrics["simulator_records"] == outputs
        assert metrics["simulator_steps"] == steps.filter(pl.col("seconds") > 0).height
        env = warehouse.read("pool", run_id=run_id, pool="env")
        assert metrics["d_env_added"] == env.filter(generation=g).height  # the summary line's D_env growth
        assert metrics["d_env"] == env.filter(pl.col("generation") <= g).height
        assert f"D_env {metrics['d_env']} (+{metrics['d_env_added']})" in summary_line(g, metrics)


def test_the_update_is_measured_on_the_same_probe_tasks_before_and_after(finished_run):
    config, run_id, warehouse = finished_run
    tasks = warehouse.read("tasks", run_id=run_id)
    trajectories = warehouse.read("trajectories", run_id=run_id)
    for g in (1, 2):
        fresh = tasks.filter(generation=g, valid=True, origin="simulator")["task_id"].to_list()
        before = trajectories.filter(generation=g, purpose="probe_before")
        after = trajectories.filter(generation=g, purpose="probe_after")
        assert before.height == after.height == min(config.probe_tasks, len(fresh))
        assert sorted(before["task_id"]) == sorted(after["task_id"]) and set(before["task_id"]) <= set(fresh)
        metrics = json.loads(warehouse.committed(run_id).filter(generation=g)["metrics"][0])
        if before.height:
            assert metrics["probe_before"] == pytest.approx(before["reward"].mean(), abs=1e-4)
            assert metrics["probe_after"] == pytest.approx(after["reward"].mean(), abs=1e-4)


def test_optimizer_state_travels_with_the_trained_adapters(finished_run):
    from genenv.models.policy import OPTIMIZER_FILE

    config, run_id, warehouse = finished_run
    training = warehouse.read("training", run_id=run_id)
    for row in warehouse.committed(run_id).iter_rows(named=True):
        for role in ("agent", "simulator"):
            stepped = training.filter(
                pl.col("generation") <= row["generation"], pl.col("role") == role, pl.col("phase") != "warm_start"
            )
            saved = (Path(row[f"{role}_checkpoint"]) / OPTIMIZER_FILE).exists()
            assert saved == (stepped["grad_norm"] > 0).any(), (row["generation"], role)


def test_sql_answers_one_row_per_committed_generation(finished_run):
    config, run_id, warehouse = finished_run
    result = query(warehouse, "SELECT generation, avg(reward) AS r FROM trajectories GROUP BY 1 ORDER BY 1", run_id)
    assert result["generation"].to_list() == [0, 1, 2]


def test_rerunning_the_flow_resumes_without_duplicating(finished_run):
    from genenv.flows.evolve import evolve

    config, run_id, warehouse = finished_run
    before = {t: warehouse.version(t) for t in (*GENERATION_TABLES, "generations")}
    assert evolve(config.to_dict(), run_id=run_id) == run_id
    after = {t: warehouse.version(t) for t in before}
    assert after == before
    assert warehouse.run_config(run_id) == config


def test_every_generation_runs_on_the_models_evolve_holds(finished_run):
    """evolve hands its runtime to each generation's flow run (Prefect stores it by name): the models load once
    for the run, not once a generation."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    _, run_id, _ = finished_run
    names = [f"{run_id}-g{generation}" for generation in range(3)]
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=names)))
    assert sorted(run.name for run in runs) == names
    assert {run.parameters["runtime"] for run in runs} == {"<ModelRuntime>"}


def test_abstention_is_held_to_its_share_of_the_trained_groups(finished_run):
    """The summary's trained groups by kind: abstaining groups of any source (fresh or pool `[]` tasks, constructed
    ones) are at most `abstention_share` of the calls trained, and what the agent abstains on is logged."""
    config, run_id, warehouse = finished_run
    for g in (1, 2):
        metrics = json.loads(warehouse.committed(run_id).filter(generation=g)["metrics"][0])
        trained = metrics["trained_kinds"]
        assert set(trained) == set(GROUP_KINDS) and sum(trained.values()) == metrics["groups_trained"]
        calls = trained["fresh_call"] + trained["pool_call"]
        abstaining = trained["fresh_abstain"] + trained["pool_abstain"] + trained["constructed"]
        assert abstaining <= abstentions_for_share(config.abstention_share, calls)
        assert all(metrics["drawn_kinds"][kind] >= trained[kind] for kind in GROUP_KINDS)
        assert {f"abstained_{p}" for p in ("fresh", "probe_before", "probe_after", "heldout")} <= set(metrics)
