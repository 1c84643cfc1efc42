"""Stage 7, commit: measure the generation, then write its `generations` row, the moment it becomes visible.

The row records the Delta version of every table (the generation's snapshot), the adapters it ended
with, the config hash, the seed and the headline metrics.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl
from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from genenv.config import GenEnvConfig
from genenv.evaluation.bootstrap import bootstrap_mean
from genenv.tasks.artifacts import artifact_key, curriculum_trend, loss_curves, p_hat_histogram, summary_rows
from genenv.tasks.context import GenerationRef, pool_ids
from genenv.tasks.contract import Adapters, Measured, StageOutput, generation_stage
from genenv.tasks.finetune import agent_batch


def _mean(series: pl.Series) -> float | None:
    return None if series.is_empty() else round(float(series.cast(pl.Float64).mean()), 4)


def generation_metrics(ref: GenerationRef, stage_seconds: dict[str, float]) -> dict[str, Any]:
    warehouse, g = ref.warehouse, ref.generation
    tasks = warehouse.read("tasks", run_id=ref.run_id, generation=g).filter(origin="simulator")
    trajectories = warehouse.read("trajectories", run_id=ref.run_id, generation=g)
    batches = warehouse.read("batches", run_id=ref.run_id, generation=g)
    training = warehouse.read("training", run_id=ref.run_id, generation=g)

    def by(purpose: str) -> pl.DataFrame:
        return trajectories.filter(purpose=purpose)

    def last_loss(role: str, replay: bool = False) -> float | None:
        """The role's last step's loss in its main phase (warm start, GRPO or RWR), or in the agent's replay."""
        steps = training.filter(pl.col("role") == role, (pl.col("phase") == "replay") == replay)
        losses = steps.sort("step")["loss"]
        return None if losses.is_empty() else round(float(losses[-1]), 4)

    reasons = tasks.filter(~pl.col("valid"))["reject_reason"].value_counts(sort=True)
    return {
        "simulator_outputs": tasks.height,
        "valid_rate": _mean(tasks["valid"]),
        "reject_reasons": dict(reasons.iter_rows()),
        "mean_p_hat": _mean(batches["p_hat"].drop_nulls()),
        "band_share": _mean(batches.filter(pl.col("p_hat").is_not_null())["in_band"]),
        "fresh_success": _mean(by("fresh")["solved"]),
        "pool_success": _mean(by("pool")["solved"]),
        "abstention_success": _mean(by("abstention")["solved"]),
        **_groups(ref),
        "heldout_success": _mean(by("heldout")["solved"]),
        **_heldout_interval(by("heldout")["solved"]),
        "probe_before": _mean(by("probe_before")["reward"]),
        "probe_after": _mean(by("probe_after")["reward"]),
        "mean_completion_tokens": _mean(trajectories["completion_tokens"]),
        "agent_loss": last_loss("agent"),
        "replay_loss": last_loss("agent", replay=True),
        "simulator_loss": last_loss("simulator"),
        **_simulator_update(training.filter(role="simulator").filter(pl.col("phase") != "warm_start"), ref.config),
        "d_train": len(pool_ids(ref, "train", g)),
        "d_env": len(pool_ids(ref, "env", g)),
        "stage_seconds": stage_seconds,
    }


def _simulator_update(steps: pl.DataFrame, config: GenEnvConfig) -> dict[str, Any]:
    """The records the simulator trained on this generation (each pass counts them once) and the optimizer steps it
    took: a GRPO step without signal is recorded with 0 seconds and leaves the weights alone."""
    return {
        "simulator_records": int(steps["n_rows"].sum()) // config.simulator_epochs,
        "simulator_steps": steps.filter(pl.col("seconds") > 0).height,
    }


def _heldout_interval(solved: pl.Series) -> dict[str, Any]:
    """The held-out success rate's 95% interval (the bootstrap the benchmark scores use) and its item count."""
    if solved.is_empty():
        return {"heldout_ci": None, "heldout_n": 0}
    interval = bootstrap_mean(solved.cast(pl.Float64).to_list())
    return {"heldout_ci": [round(interval.low, 4), round(interval.high, 4)], "heldout_n": interval.n}


def _groups(ref: GenerationRef) -> dict[str, Any]:
    """How many GRPO groups were rolled out and trained on, and the share of those rolled out with equal rewards."""
    if ref.generation == 0:
        return {"groups_drawn": 0, "groups_trained": 0, "zero_spread_drawn": None}
    batch = agent_batch(ref)
    return {
        "groups_drawn": len(batch.drawn),
        "groups_trained": len(batch.trained),
        "zero_spread_drawn": round(batch.zero_spread_drawn, 4),
    }


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
        groups = f" | GRPO groups {m['groups_trained']} of {m['groups_drawn']} ({fmt(m['zero_spread_drawn'])} equal)"
    return (
        f"generation {generation}: valid tasks {fmt(m['valid_rate'])} | mean p̂ {fmt(m['mean_p_hat'], False)} | "
        f"in α band {fmt(m['band_share'])} | agent success fresh {fmt(m['fresh_success'])} "
        f"abstention {fmt(m.get('abstention_success'))} held-out {heldout}{groups} | "
        f"probe before update {fmt(m['probe_before'])} "
        f"after {fmt(m['probe_after'])} | loss agent {fmt(m['agent_loss'], False)} "
        f"simulator {fmt(m['simulator_loss'], False)} | simulator {m.get('simulator_records', 0)} records "
        f"{m.get('simulator_steps', 0)} steps | D_train {m['d_train']} D_env {m['d_env']} | {seconds}"
    )


def never_committed(*_: object) -> None:
    """The flow commits only generations that are not committed yet; the commit itself is one atomic write."""


@generation_stage(done=never_committed, writes=("generations",))
def commit(measured: Measured, adapters: Adapters, stages: list[StageOutput]) -> StageOutput:
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
