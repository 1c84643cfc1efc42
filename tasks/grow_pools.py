"""Stage 5, grow the pools (Algorithm 1): D_train ∪= Valid(E_t), every valid fresh task (with d_train_needs_agreement,
only those the rewards stage recorded a p̂ above 0 for: a label no answer of the agent matched stays out); D_env ∪=
the kept records, the valid tasks of the units the rewards stage recorded in the α band, each with its unit's RWR
weight."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from genenv.curriculum.pools import grow_pool
from genenv.pipeline.context import GenerationRef, pool_ids, task_generation
from genenv.pipeline.contract import StageOutput, generation_stage


def pools_grown(rewarded: StageOutput) -> StageOutput | None:
    ref = rewarded.ref
    return StageOutput(ref) if ref.warehouse.has_rows("pool", ref.run_id, ref.generation) else None


@generation_stage(done=pools_grown, reads=("tasks", "batches"), writes=("pool",))
def grow_pools(rewarded: StageOutput) -> StageOutput:
    ref = rewarded.ref
    warehouse = ref.warehouse
    tasks = warehouse.read("tasks", run_id=ref.run_id, generation=task_generation(ref))
    valid = tasks.filter(origin="simulator", valid=True).sort("task_id")
    units = warehouse.read("batches", run_id=ref.run_id, generation=ref.generation)
    kept = units.filter(in_band=True)
    weights = d_env_weights(kept.iter_rows(named=True), valid.select("task_id", "batch_id").iter_rows())
    joining = agreed(valid["task_id"], units) if ref.config.d_train_needs_agreement else valid["task_id"]
    rows = [_pool_row(ref, "train", t, 1.0) for t in new_members(ref, "train", joining)]
    rows += [_pool_row(ref, "env", t, weights[t]) for t in new_members(ref, "env", weights)]
    warehouse.append("pool", rows)
    return StageOutput(ref, {"pool_added": len(rows)})


def d_env_weights(kept_units: Iterable[dict], valid_tasks: Iterable[tuple[str, str]]) -> dict[str, float]:
    """task id -> RWR weight for the valid tasks of kept units (`batches` rows in the band): a kept task, or every
    valid task of a kept batch."""
    kept = {(unit["task_id"] or unit["batch_id"]): unit["rwr_weight"] for unit in kept_units}
    return {t: kept[t] if t in kept else kept[b] for t, b in valid_tasks if t in kept or b in kept}


def agreed(task_ids: Iterable[str], units: pl.DataFrame) -> list[str]:
    """The tasks of `task_ids` whose own p̂ (reward_scope=task: one `batches` row per output) is above 0, in order."""
    solved_some = set(units.filter(pl.col("p_hat") > 0)["task_id"].drop_nulls())
    return [t for t in task_ids if t in solved_some]


def new_members(ref: GenerationRef, pool: str, candidates: Iterable[str]) -> list[str]:
    """What joins the pool this generation: the candidates not in it yet, in order."""
    before = pool_ids(ref, pool, ref.generation - 1)
    return grow_pool(before, list(candidates))[len(before) :]


def _pool_row(ref: GenerationRef, pool: str, task_id: str, weight: float) -> dict:
    return {"run_id": ref.run_id, "generation": ref.generation, "pool": pool, "task_id": task_id, "weight": weight}
