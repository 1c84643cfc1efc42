"""Stage 4, rewards: p̂ and R_env per generated task (or per seed batch), the α band and RWR weights, recorded in
`batches` for the pools to grow from (tasks/grow_pools.py). With simulator_pool_rescore, D_env's records of earlier
generations that the rollout stage answered again get their p̂ now, the band and a weight (`rescores`): RWR trains
only on those still in the band.
"""

from __future__ import annotations

import polars as pl

from genenv.config import GenEnvConfig
from genenv.curriculum.batches import BatchOutcome, BatchScore, TaskOutcome, score_batches, score_tasks
from genenv.curriculum.generator_rewards import CurriculumParams
from genenv.domains.base import REPEAT
from genenv.faults import crash_point
from genenv.pipeline.context import GenerationRef, task_from_row, task_generation
from genenv.pipeline.contract import StageOutput, generation_stage
from genenv.warehouse.purposes import Purpose


def never_done(_: StageOutput) -> None:
    """Rewards are recomputed from the verdicts each time; each table is written only when missing."""


@generation_stage(done=never_done, reads=("tasks", "trajectories"), writes=("batches", "rescores"))
def rewards(scored: StageOutput) -> StageOutput:
    ref = scored.ref
    config, warehouse = ref.config, ref.warehouse
    tasks = warehouse.read("tasks", run_id=ref.run_id, generation=task_generation(ref)).filter(origin="simulator")
    fresh = warehouse.read("trajectories", run_id=ref.run_id, generation=ref.generation, purpose=Purpose.FRESH)
    success = fresh.group_by("task_id").agg(pl.col("solved").cast(pl.Float64).mean().alias("success"))
    per_task = shared_verdicts(ref, tasks.join(success, on="task_id", how="left").sort("task_id"))

    params = CurriculumParams(config.alpha, config.beta, config.k_min, config.rwr_lambda)
    scores = reward_units(per_task, config, params)
    if not warehouse.has_rows("batches", ref.run_id, ref.generation):
        warehouse.append(
            "batches",
            [
                {
                    "run_id": ref.run_id,
                    "generation": ref.generation,
                    **{k: getattr(s, k) for k in ("batch_id", "seed_task_id", "task_id", "n_variations", "n_valid")},
                    "p_hat": s.p_hat,
                    "reward_name": config.generator_reward,
                    "generator_reward": s.generator_reward,
                    "in_band": s.in_band,
                    "rwr_weight": s.rwr_weight,
                }
                for s in scores
            ],
        )
    crash_point(f"g{ref.generation}:rewards:between-tables")
    rescored = rescore_rows(ref, params)
    if rescored and not warehouse.has_rows("rescores", ref.run_id, ref.generation):
        warehouse.append("rescores", rescored)
    units = {"reward_units": len(scores), "in_band": sum(s.in_band for s in scores)}
    units |= {"rescored": len(rescored), "rescored_in_band": sum(r["in_band"] for r in rescored)}
    return StageOutput(ref, units)


def shared_verdicts(ref: GenerationRef, per_task: pl.DataFrame) -> pl.DataFrame:
    """`per_task` with `scored`: valid, or a repeat (an output identical to a valid one written earlier in this
    generation), which scores as that output, with its success. Only valid tasks join the pools."""
    domain = ref.domain
    success = {
        domain.dedup_key(task_from_row(r)): r["success"] for r in per_task.filter(valid=True).iter_rows(named=True)
    }
    repeats = per_task.filter(reject_reason=REPEAT)
    shared = [success.get(domain.dedup_key(task_from_row(r))) for r in repeats.iter_rows(named=True)]
    per_task = per_task.with_columns(scored=pl.col("valid"))
    return per_task.update(
        repeats.select("task_id").with_columns(scored=pl.lit(True), success=pl.Series(shared, dtype=pl.Float64)),
        on="task_id",
    )


def reward_units(per_task: pl.DataFrame, config: GenEnvConfig, params: CurriculumParams) -> list[BatchScore]:
    """One score per simulator output (reward_scope=task) or per seed batch (reward_scope=batch)."""
    if config.reward_scope == "task":
        outcomes = [
            TaskOutcome(row["task_id"], row["batch_id"], row["seed_task_id"], row["success"] if row["scored"] else None)
            for row in per_task.iter_rows(named=True)
        ]
        return score_tasks(outcomes, config.generator_reward, params, config.simulator_invalid_advantage)
    batches = [
        BatchOutcome(
            batch_id=batch_id,
            seed_task_id=group["seed_task_id"][0],
            n_variations=group.height,
            variation_success=group.filter(valid=True)["success"].to_list(),
        )
        for (batch_id,), group in per_task.group_by("batch_id", maintain_order=True)
    ]
    return score_batches(batches, config.generator_reward, params)


def rescore_rows(ref: GenerationRef, params: CurriculumParams) -> list[dict]:
    """One `rescores` row per D_env record the agent answered again this generation, scored as the record was when it
    joined (`score_tasks`): p̂ over those answers, R_env, the band, RWR weights among the records still in it."""
    config = ref.config
    answers = ref.warehouse.read("trajectories", run_id=ref.run_id, generation=ref.generation, purpose=Purpose.RESCORE)
    if answers.is_empty():
        return []
    per_task = answers.group_by("task_id").agg(pl.len().alias("n"), pl.col("solved").cast(pl.Float64).mean())
    records = ref.warehouse.read("tasks", run_id=ref.run_id).filter(pl.col("task_id").is_in(per_task["task_id"]))
    rows = per_task.join(records.select("task_id", "batch_id", "seed_task_id"), on="task_id").sort("task_id")
    outcomes = [
        TaskOutcome(r["task_id"], r["batch_id"], r["seed_task_id"], r["solved"]) for r in rows.iter_rows(named=True)
    ]
    scores = score_tasks(outcomes, config.generator_reward, params, config.simulator_invalid_advantage)
    return [
        {
            "run_id": ref.run_id,
            "generation": ref.generation,
            "task_id": s.task_id,
            "n_answers": n,
            "p_hat": s.p_hat,
            "generator_reward": s.generator_reward,
            "in_band": s.in_band,
            "rwr_weight": s.rwr_weight,
        }
        for s, n in zip(scores, rows["n"], strict=True)
    ]
