"""Stage 6, evaluate: the agent's greedy solve rate on the held-out seeds, which no model ever trains on, and on
the probe tasks the rollout stage answered before the update (what the update did)."""

from __future__ import annotations

import time

import polars as pl

from genenv.tasks.context import GenerationRef, fresh_tasks, greedy_sampling, load_tasks, probe_set, stage_result
from genenv.tasks.options import stage
from genenv.tasks.rollout import answer_tasks
from genenv.tasks.runtime import RUNTIME, own_checkpoints, reference_checkpoints
from genenv.tasks.verify import trajectory_rows


@stage("evaluate-heldout", gpu=True)
def evaluate_heldout(ref: GenerationRef) -> dict:
    started = time.perf_counter()
    config, warehouse = ref.config, ref.warehouse
    if warehouse.has_rows("trajectories", ref.run_id, ref.generation, purpose="heldout"):
        return stage_result(ref, "evaluate", started, skipped=True)
    seeds = warehouse.read("tasks", run_id=ref.run_id, generation=0).filter(pl.col("heldout") & pl.col("valid"))
    ids = sorted(seeds["task_id"].to_list())
    ids = ids[: config.max_heldout] if config.max_heldout else ids
    known = load_tasks(ref)
    work = [(known[i], "heldout") for i in ids]
    if ref.generation > 0:
        work += [(t, "probe_after") for t in probe_set(ref, fresh_tasks(ref, known))]
    backend = RUNTIME.backend(config, own_checkpoints(ref), reference_checkpoints(ref))
    answers = answer_tasks(ref, backend, work, 1, greedy_sampling(config), "held-out eval and probe")
    rows = trajectory_rows(ref, answers)
    warehouse.append("trajectories", rows)
    heldout = [r for r in rows if r["purpose"] == "heldout"]
    return stage_result(ref, "evaluate", started, heldout=len(heldout), solved=sum(r["solved"] for r in heldout))
