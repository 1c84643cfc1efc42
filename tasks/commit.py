"""Stage 8, commit: measure the generation, then write its `generations` row, the moment it becomes visible.

The row records the Delta version of every table (the generation's snapshot), the adapters it ended
with, the config hash, the seed and the headline metrics.
"""

from __future__ import annotations

import json
from typing import Any, cast

import polars as pl
from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from genenv.config import GenEnvConfig
from genenv.curriculum.pools import still_missing
from genenv.domains.base import AbstainingDomain, DescribedDifficulty, Domain, TaskInstance
from genenv.evaluation.bootstrap import bootstrap_mean
from genenv.pipeline.artifacts import artifact_key, curriculum_trend, loss_curves, p_hat_histogram, summary_rows
from genenv.pipeline.context import GenerationRef, load_tasks, pool_ids, task_generation
from genenv.pipeline.contract import Adapters, StageOutput, generation_stage
from genenv.tasks.agent_groups import recorded_batch
from genenv.warehouse.purposes import Purpose
from genenv.warehouse.schemas import GENERATION_TABLES


def _mean(series: pl.Series) -> float | None:
    mean = series.cast(pl.Float64).mean()
    return None if series.is_empty() else round(cast(float, mean), 4)  # a Float64 series' mean: a float


def generation_metrics(ref: GenerationRef, stage_seconds: dict[str, float]) -> dict[str, Any]:
    warehouse, g = ref.warehouse, ref.generation
    tasks = warehouse.read("tasks", run_id=ref.run_id, generation=g).filter(origin="simulator")
    trajectories = warehouse.read("trajectories", run_id=ref.run_id, generation=g)
    batches = warehouse.read("batches", run_id=ref.run_id, generation=g)
    training = warehouse.read("training", run_id=ref.run_id, generation=g)
    d_env = warehouse.read("pool", run_id=ref.run_id, pool="env").filter(pl.col("generation") <= g)
    domain = ref.domain  # built on each access: once here
    written = tasks.filter(valid=True)["task_id"].to_list()
    known = load_tasks(ref, sorted(set(written) | set(trajectories["task_id"])))
    abstaining = _abstaining_tasks(domain, known) if isinstance(domain, AbstainingDomain) else None

    def by(purpose: Purpose) -> pl.DataFrame:
        return trajectories.filter(purpose=purpose)

    def last_loss(role: str, replay: bool = False) -> float | None:
        """The role's last step's loss in its main phase (warm start, GRPO or RWR), or in the agent's replay."""
        steps = training.filter(pl.col("role") == role, (pl.col("phase") == "replay") == replay)
        losses = steps.sort("step")["loss"]
        return None if losses.is_empty() else round(float(losses[-1]), 4)

    reasons = tasks.filter(~pl.col("valid"))["reject_reason"].value_counts(sort=True)
    scored = batches.filter(pl.col("p_hat").is_not_null())
    return {
        "simulator_outputs": tasks.height,
        "valid_rate": _mean(tasks["valid"]),
        "reject_reasons": dict(reasons.iter_rows()),
        "mean_p_hat": _mean(scored["p_hat"]),
        "band_share": _mean(scored["in_band"]),
        "mean_distance_to_alpha": _mean((scored["p_hat"] - ref.config.alpha).abs()),
        "simulator_abstain_share": _abstaining_share(tasks.filter(valid=True), abstaining),
        **_difficulty(domain, [known[i] for i in written]),
        "fresh_success": _mean(by(Purpose.FRESH)["solved"]),
        "pool_success": _mean(by(Purpose.POOL)["solved"]),
        "abstention_success": _mean(by(Purpose.ABSTENTION)["solved"]),
        **_groups(ref),
        **{f"abstained_{p}": _abstained_on_calls(domain, by(p), abstaining) for p in ABSTAINED_PURPOSES},
        "heldout_success": _mean(by(Purpose.HELDOUT)["solved"]),
        **_heldout_interval(by(Purpose.HELDOUT)["solved"]),
        "probe_before": _mean(by(Purpose.PROBE_BEFORE)["reward"]),
        "probe_after": _mean(by(Purpose.PROBE_AFTER)["reward"]),
        "mean_completion_tokens": _mean(trajectories["completion_tokens"]),
        "agent_loss": last_loss("agent"),
        "replay_loss": last_loss("agent", replay=True),
        "simulator_loss": last_loss("simulator"),
        **_simulator_update(training.filter(role="simulator").filter(pl.col("phase") != "warm_start"), ref.config),
        **_d_train(ref),
        "d_env": d_env.height,
        "d_env_added": d_env.filter(generation=g).height,
        **_rescored(warehouse.read("rescores", run_id=ref.run_id, generation=g)),
        "stage_seconds": stage_seconds,
    }


def _d_train(ref: GenerationRef) -> dict[str, Any]:
    """D_train's size, what joined it this generation, and (d_train_needs_agreement) how many of the valid tasks the
    generation offered it (its own, or static_tasks' generation 1) stayed out because no answer of the agent's
    matched their label."""
    members = pool_ids(ref, "train", ref.generation)
    sizes = {"d_train": len(members), "d_train_added": len(members) - len(pool_ids(ref, "train", ref.generation - 1))}
    if not ref.config.d_train_needs_agreement:
        return sizes
    offered = ref.warehouse.read("tasks", run_id=ref.run_id, generation=task_generation(ref))
    valid = offered.filter(origin="simulator", valid=True)["task_id"]
    return sizes | {"d_train_unagreed": len(set(valid) - set(members))}


def _rescored(rescores: pl.DataFrame) -> dict[str, Any]:
    """D_env's earlier records answered again this generation (simulator_pool_rescore) and how many are still in the
    band: the others the simulator did not train on."""
    if rescores.is_empty():
        return {}
    return {"d_env_rescored": rescores.height, "d_env_still_in_band": int(rescores["in_band"].sum())}


def _simulator_update(steps: pl.DataFrame, config: GenEnvConfig) -> dict[str, Any]:
    """The records the simulator trained on this generation (each pass counts them once) and the optimizer steps it
    took: a GRPO step without signal is recorded with 0 seconds and leaves the weights alone."""
    return {
        "simulator_records": int(steps["n_rows"].sum()) // config.role_update("simulator").epochs,
        "simulator_steps": steps.filter(pl.col("seconds") > 0).height,
    }


def _heldout_interval(solved: pl.Series) -> dict[str, Any]:
    """The held-out success rate's 95% interval (the bootstrap the benchmark scores use) and its item count."""
    if solved.is_empty():
        return {"heldout_ci": None, "heldout_n": 0}
    interval = bootstrap_mean(solved.cast(pl.Float64).to_list())
    return {"heldout_ci": [round(interval.low, 4), round(interval.high, 4)], "heldout_n": interval.n}


def _groups(ref: GenerationRef) -> dict[str, Any]:
    """The GRPO groups rolled out and trained on, by kind (what they teach, from where), the share of those rolled out
    with equal rewards, and what a full batch still lacked when dynamic sampling's rounds ran out."""
    if ref.generation == 0:
        return {"groups_drawn": 0, "groups_trained": 0, "zero_spread_drawn": None}
    batch = recorded_batch(ref)
    config = ref.config
    missing = still_missing(batch.drawn, batch.call_target, config.abstention_share, config.dynamic_sampling)
    return {
        "groups_drawn": len(batch.drawn),
        "groups_trained": len(batch.trained),
        "zero_spread_drawn": round(batch.zero_spread_drawn, 4),
        "drawn_kinds": batch.kinds(batch.drawn),
        "trained_kinds": batch.kinds(batch.trained),
        "trained_at_edge": round(sum(batch.drawn[i].at_edge for i in batch.trained) / len(batch.trained), 4)
        if batch.trained
        else None,
        "batch_short": {"calls": missing[0], "abstentions": missing[1]},
    }


ABSTAINED_PURPOSES = (Purpose.FRESH, Purpose.PROBE_BEFORE, Purpose.PROBE_AFTER, Purpose.HELDOUT)
"""The answers whose abstentions on tasks that ask for an action are counted (the `[]` share of BFCL's calls)."""


def _abstaining_tasks(domain: AbstainingDomain, known: dict[str, TaskInstance]) -> set[str]:
    """The ids among `known` whose answer is to abstain: one read of the tasks for every measure that needs it."""
    return {i for i, task in known.items() if domain.is_abstention(task)}


def _difficulty(domain: Domain, tasks: list[TaskInstance]) -> dict[str, Any]:
    """The mean difficulty of the simulator's valid tasks, and of each part where the domain describes them."""
    if not tasks:
        return {"mean_difficulty": None, "difficulty_parts": None}
    if not isinstance(domain, DescribedDifficulty):
        return {"mean_difficulty": round(sum(map(domain.difficulty, tasks)) / len(tasks), 3), "difficulty_parts": None}
    described = [domain.difficulty_parts(t) for t in tasks]  # difficulty is their sum: each part counted once
    parts = {name: sum(d[name] for d in described) / len(tasks) for name in described[0]}
    return {
        "mean_difficulty": round(sum(parts.values()), 3),
        "difficulty_parts": {name: round(mean, 3) for name, mean in parts.items()},
    }


def _abstaining_share(tasks: pl.DataFrame, abstaining: set[str] | None) -> float | None:
    """Share of the simulator's valid outputs whose answer is to abstain (None where the domain has no abstention)."""
    if abstaining is None or tasks.is_empty():
        return None
    return round(len(set(tasks["task_id"]) & abstaining) / tasks.height, 4)


def _abstained_on_calls(domain: Domain, answers: pl.DataFrame, abstaining: set[str] | None) -> float | None:
    """Share of the answers to tasks that ask for an action that abstain instead (None without abstention)."""
    if abstaining is None or not isinstance(domain, AbstainingDomain) or answers.is_empty():
        return None
    on_calls = answers.filter(~pl.col("task_id").is_in(list(abstaining)))
    if on_calls.is_empty():
        return None
    return round(sum(map(domain.abstains, on_calls["completion"])) / on_calls.height, 4)


def summary_line(generation: int, m: dict[str, Any]) -> str:
    def fmt(value: float | None, pct: bool = True) -> str:
        if value is None:
            return "-"
        return f"{100 * value:.0f}%" if pct else f"{value:.3f}"

    seconds = " ".join(f"{k}={v:.0f}s" for k, v in m["stage_seconds"].items())
    interval = m.get("heldout_ci")
    heldout = fmt(m["heldout_success"])
    if interval:
        heldout += f" [{fmt(interval[0])}, {fmt(interval[1])}] of {m['heldout_n']}"
    groups = ""
    if m.get("groups_drawn"):
        trained = m.get("trained_kinds") or {}
        kinds = " ".join(f"{kind} {count}" for kind, count in trained.items() if count)
        short = m.get("batch_short") or {}
        lacking = f", short {short['calls']} calls {short['abstentions']} []" if any(short.values()) else ""
        groups = (
            f" | GRPO groups {m['groups_trained']} of {m['groups_drawn']} ({fmt(m['zero_spread_drawn'])} equal; "
            f"{kinds}{lacking}; at the edge {fmt(m.get('trained_at_edge'))})"
        )
    rescored = ""
    if m.get("d_env_rescored"):
        rescored = f"; {m['d_env_still_in_band']} of {m['d_env_rescored']} earlier still in band"
    unagreed = f", {m['d_train_unagreed']} valid kept out: no answer agreed" if "d_train_unagreed" in m else ""
    abstained = ""
    if m.get("abstained_heldout") is not None:
        shares = " ".join(f"{p} {fmt(m.get(f'abstained_{p}'))}" for p in ABSTAINED_PURPOSES)
        abstained = f" | [] on calls: {shares}"
    return (
        f"generation {generation}: valid tasks {fmt(m['valid_rate'])} | mean p̂ {fmt(m['mean_p_hat'], False)} | "
        f"in α band {fmt(m['band_share'])} |p̂-α| {fmt(m.get('mean_distance_to_alpha'), False)} | simulator [] "
        f"{fmt(m.get('simulator_abstain_share'))} | agent success fresh {fmt(m['fresh_success'])} "
        f"abstention {fmt(m.get('abstention_success'))} held-out {heldout}{groups}{abstained} | "
        f"probe before update {fmt(m['probe_before'])} "
        f"after {fmt(m['probe_after'])} | loss agent {fmt(m['agent_loss'], False)} "
        f"simulator {fmt(m['simulator_loss'], False)} | simulator {m.get('simulator_records', 0)} records "
        f"{m.get('simulator_steps', 0)} steps | D_train {m['d_train']} (+{m.get('d_train_added', 0)}{unagreed}) "
        f"D_env {m['d_env']} "
        f"(+{m.get('d_env_added', 0)}{rescored}) | {seconds}"
    )


def never_committed(*_: object) -> None:
    """The flow commits only generations that are not committed yet; the commit itself is one atomic write."""


@generation_stage(done=never_committed, reads=GENERATION_TABLES, writes=("generations",))  # its row: every version
def commit(measured: StageOutput, adapters: Adapters, stages: list[StageOutput]) -> StageOutput:
    ref = measured.ref
    config = ref.config
    metrics = generation_metrics(ref, {output.stage: output.seconds for output in stages})
    row = ref.warehouse.commit_generation(
        ref.run_id,
        ref.generation,
        agent_checkpoint=adapters.agent,
        simulator_checkpoint=adapters.simulator,
        config_hash=config.hash(),
        seed=config.seed,
        metrics=metrics,
    )
    get_run_logger().info(summary_line(ref.generation, metrics))
    publish_generation(ref, metrics, json.loads(row["table_versions"]))
    return StageOutput(ref, {"committed_at": str(row["committed_at"])})


def publish_generation(ref: GenerationRef, metrics: dict[str, Any], table_versions: dict[str, int | None]) -> None:
    """The artifacts of one committed generation (called by the commit stage, after the commit)."""
    run_id, g, warehouse, config = ref.run_id, ref.generation, ref.warehouse, ref.config
    create_table_artifact(
        summary_rows(g, metrics), key=artifact_key(run_id, f"g{g}", "summary"), description=f"{run_id} generation {g}"
    )
    batches = warehouse.read("batches", run_id=run_id, generation=g)
    create_markdown_artifact(
        p_hat_histogram(batches, config.alpha, config.k_min),
        key=artifact_key(run_id, f"g{g}", "p-hat"),
        description=f"{run_id} generation {g}: p̂ of the generated tasks (or seed batches), the α band marked",
    )
    create_markdown_artifact(
        curriculum_trend(warehouse.committed(run_id)),
        key=artifact_key(run_id, "curriculum"),
        description="success and α-band share per generation",
    )
    training = warehouse.read("training", run_id=run_id, generation=g)
    create_markdown_artifact(
        loss_curves(training),
        key=artifact_key(run_id, f"g{g}", "losses"),
        description=f"{run_id} generation {g}: loss per optimizer step of each update",
    )
    create_table_artifact(
        [{"table": table, "delta_version": version} for table, version in table_versions.items()],
        key=artifact_key(run_id, f"g{g}", "snapshot"),
        description=(
            f"{run_id} generation {g}: the Delta version of every table it committed, in {warehouse.root_uri}. "
            f'Query it with `genenv sql --warehouse {warehouse.root_uri} --run {run_id} --as-of-generation {g} "..."`'
        ),
    )
