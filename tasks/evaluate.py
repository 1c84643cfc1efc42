"""Stage 6, evaluate: the agent's greedy solve rate on the held-out seeds, which no model ever trains on."""

from __future__ import annotations

import time

import polars as pl

from models.generation import SamplingSettings
from tasks.context import GenerationRef, load_tasks, stage_result
from tasks.options import stage
from tasks.rollout import answer_tasks
from tasks.runtime import RUNTIME, own_checkpoints
from tasks.verify import trajectory_rows


@stage("evaluate-heldout", gpu=True)
def evaluate_heldout(ref: GenerationRef) -> dict:
    started = time.perf_counter()
    config, warehouse = ref.config, ref.warehouse
    if warehouse.has_rows("trajectories", ref.run_id, ref.generation, purpose="heldout"):
        return stage_result(ref, "evaluate", started, skipped=True)
    seeds = warehouse.read("tasks", run_id=ref.run_id, generation=0).filter(pl.col("heldout") & pl.col("valid"))
    ids = sorted(seeds["task_id"].to_list())
    ids = ids[: config.max_heldout] if config.max_heldout else ids
    tasks = load_tasks(ref, ids)
    backend = RUNTIME.backend(config, own_checkpoints(ref))
    greedy = SamplingSettings(max_new_tokens=config.agent_max_new_tokens, temperature=0.0, seed=config.seed)
    answers = answer_tasks(ref, backend, [(t, "heldout") for t in tasks.values()], 1, greedy, "held-out eval")
    rows = trajectory_rows(ref, answers)
    warehouse.append("trajectories", rows)
    return stage_result(ref, "evaluate", started, heldout=len(rows), solved=sum(r["solved"] for r in rows))
