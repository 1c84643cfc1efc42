"""Stage 7, commit: measure the generation, then write its `generations` row, the moment it becomes visible.

The row records the Delta version of every table (the generation's snapshot), the adapters it ended
with, the config hash, the seed and the headline metrics.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl
from prefect import get_run_logger

from genenv.tasks.artifacts import publish_generation
from genenv.tasks.context import GenerationRef, pool_ids
from genenv.tasks.contract import Adapters, Measured, StageOutput, generation_stage


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

    def last_loss(role: str) -> float | None:
        losses = training.filter(role=role).sort("step")["loss"]
        return None if losses.is_empty() else round(float(losses[-1]), 4)

    reasons = tasks.filter(~pl.col("valid"))["reject_reason"].value_counts(sort=True)
    return {
        "simulator_outputs": tasks.height,
        "valid_rate": _mean(tasks["valid"]),
        "reject_reasons": dict(reasons.iter_rows()),
        "mean_p_hat": _mean(batches["p_hat"].drop_nulls()),
        "band_share": _mean(batches["in_band"]),
        "fresh_success": _mean(by("fresh")["solved"]),
        "pool_success": _mean(by("pool")["solved"]),
        "heldout_success": _mean(by("heldout")["solved"]),
        "probe_before": _mean(by("probe_before")["reward"]),
        "probe_after": _mean(by("probe_after")["reward"]),
        "mean_completion_tokens": _mean(trajectories["completion_tokens"]),
        "agent_loss": last_loss("agent"),
        "simulator_loss": last_loss("simulator"),
        "d_train": len(pool_ids(ref, "train", g)),
        "d_env": len(pool_ids(ref, "env", g)),
        "stage_seconds": stage_seconds,
    }


def summary_line(generation: int, m: dict[str, Any]) -> str:
    def fmt(value: float | None, pct: bool = True) -> str:
        if value is None:
            return "-"
        return f"{100 * value:.0f}%" if pct else f"{value:.3f}"

    seconds = " ".join(f"{k}={v:.0f}s" for k, v in m["stage_seconds"].items())
    return (
        f"generation {generation}: valid tasks {fmt(m['valid_rate'])} | mean p̂ {fmt(m['mean_p_hat'], False)} | "
        f"in α band {fmt(m['band_share'])} | agent success fresh {fmt(m['fresh_success'])} "
        f"held-out {fmt(m['heldout_success'])} | probe before update {fmt(m['probe_before'])} "
        f"after {fmt(m['probe_after'])} | loss agent {fmt(m['agent_loss'], False)} "
        f"simulator {fmt(m['simulator_loss'], False)} | D_train {m['d_train']} D_env {m['d_env']} | {seconds}"
    )


def never_committed(*_: object) -> None:
    """The flow commits only generations that are not committed yet; the commit itself is one atomic write."""


@generation_stage(done=never_committed)
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
