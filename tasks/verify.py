"""Stage 3, verify: R_agent for every rollout with the domain's verifier (Eq. 1) and its `solved` flag."""

from __future__ import annotations

import polars as pl

from genenv.pipeline.contract import Rollouts, StageOutput, generation_stage
from genenv.pipeline.staging import read_staged
from genenv.tasks.answers import record_turns, trajectory_rows
from genenv.warehouse.purposes import Purpose


def rollouts_scored(rollouts: Rollouts) -> StageOutput | None:
    ref = rollouts.ref
    trajectories = ref.warehouse.read("trajectories", run_id=ref.run_id, generation=ref.generation)
    return None if trajectories.filter(pl.col("purpose") != Purpose.HELDOUT).is_empty() else StageOutput(ref)


@generation_stage(done=rollouts_scored, reads=("tasks",), writes=("trajectories", "turns"))
def verify(rollouts: Rollouts) -> StageOutput:
    ref = rollouts.ref
    answers = read_staged(rollouts.uri)
    if answers is None:
        raise RuntimeError(f"verify {ref.run_id} g{ref.generation}: no staged rollouts at {rollouts.uri}")
    rows, turns = trajectory_rows(ref, answers)
    record_turns(ref, turns)
    ref.warehouse.append("trajectories", rows)
    return StageOutput(ref, {"trajectories": len(rows), "solved": sum(r["solved"] for r in rows)})
