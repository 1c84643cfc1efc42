"""Stage 7, evaluate: the agent's greedy solve rate on the held-out seeds, which no model ever trains on, and on
the probe tasks the rollout stage answered before the update (what the update did)."""

from __future__ import annotations

import polars as pl

from genenv.pipeline.adapter_lineage import reference_checkpoints
from genenv.pipeline.context import GenerationRef, greedy_sampling, load_tasks
from genenv.pipeline.contract import Adapters, StageOutput, generation_stage
from genenv.tasks.answers import answer_tasks, record_turns, trajectory_rows
from genenv.warehouse.purposes import Purpose


def heldout_measured(adapters: Adapters) -> StageOutput | None:
    ref = adapters.ref
    return (
        StageOutput(ref)
        if ref.warehouse.has_rows("trajectories", ref.run_id, ref.generation, purpose=Purpose.HELDOUT)
        else None
    )


def probed_before(ref: GenerationRef) -> list[str]:
    """The ids of the probe tasks the rollout stage answered before the update, as its rows recorded them."""
    rows = ref.warehouse.read(
        "trajectories", run_id=ref.run_id, generation=ref.generation, purpose=Purpose.PROBE_BEFORE
    )
    return sorted(set(rows["task_id"]))


@generation_stage(
    done=heldout_measured, reads=("tasks", "generations", "trajectories"), writes=("trajectories", "turns"), gpu=True
)
def evaluate_heldout(adapters: Adapters) -> StageOutput:
    ref = adapters.ref
    config, warehouse = ref.config, ref.warehouse
    seeds = warehouse.read("tasks", run_id=ref.run_id, generation=0).filter(pl.col("heldout") & pl.col("valid"))
    ids = sorted(seeds["task_id"].to_list())
    ids = ids[: config.max_heldout] if config.max_heldout else ids
    known = load_tasks(ref)
    work = [(known[i], Purpose.HELDOUT) for i in ids]
    if ref.generation > 0:
        work += [(known[i], Purpose.PROBE_AFTER) for i in probed_before(ref)]
    backend = ref.runtime.backend(config, (adapters.agent, adapters.simulator), reference_checkpoints(ref))
    answers = answer_tasks(ref, backend, work, 1, greedy_sampling(config), "held-out eval and probe")
    rows, turns = trajectory_rows(ref, answers)
    record_turns(ref, turns)
    warehouse.append("trajectories", rows)
    heldout = [r for r in rows if r["purpose"] == Purpose.HELDOUT]
    return StageOutput(ref, {"heldout": len(heldout), "solved": sum(r["solved"] for r in heldout)})
