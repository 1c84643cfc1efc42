"""Stage 3, verify: R_agent for every rollout with the domain's verifier (Eq. 1) and its `solved` flag."""

from __future__ import annotations

import time

import polars as pl

from genenv.tasks.context import GenerationRef, load_tasks, stage_result
from genenv.tasks.options import stage
from genenv.tasks.staging import read_staged


def trajectory_rows(ref: GenerationRef, answers: pl.DataFrame) -> list[dict]:
    """Score raw agent answers into `trajectories` rows."""
    domain, threshold = ref.domain, ref.config.solved_threshold
    tasks = load_tasks(ref, answers["task_id"].unique().to_list())
    rows = []
    for a in answers.iter_rows(named=True):
        verdict = domain.verify(a["completion"], tasks[a["task_id"]])
        rows.append(
            {
                "run_id": ref.run_id,
                "generation": ref.generation,
                "trajectory_id": ref.key(a["purpose"], a["task_id"], a["sample_index"]),
                "task_id": a["task_id"],
                "purpose": a["purpose"],
                "sample_index": a["sample_index"],
                "completion": a["completion"],
                "finished": a["finished"],
                "prompt_tokens": len(a["prompt_ids"]),
                "completion_tokens": len(a["completion_ids"]),
                "parsed_action": verdict.parsed_action,
                "parse_error": verdict.parse_error,
                "reward": verdict.reward,
                "solved": verdict.reward >= threshold,
                "prompt_ids": a["prompt_ids"],
                "completion_ids": a["completion_ids"],
            }
        )
    return rows


@stage("verify")
def verify(ref: GenerationRef) -> dict:
    started = time.perf_counter()
    trajectories = ref.warehouse.read("trajectories", run_id=ref.run_id, generation=ref.generation)
    if not trajectories.filter(pl.col("purpose") != "heldout").is_empty():
        return stage_result(ref, "verify", started, skipped=True)
    answers = read_staged(ref, "rollouts")
    if answers is None:
        raise RuntimeError(f"verify {ref.run_id} g{ref.generation}: no staged rollouts; run the rollout stage first")
    rows = trajectory_rows(ref, answers)
    ref.warehouse.append("trajectories", rows)
    solved = sum(r["solved"] for r in rows)
    return stage_result(ref, "verify", started, trajectories=len(rows), solved=solved)
