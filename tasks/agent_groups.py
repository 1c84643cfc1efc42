"""The agent's GRPO groups, shared below the stages: rollout draws until the intended groups are there, finetune
selects what it trains on and records it, commit reports what was recorded. One selection, made once, in finetune;
a stage skipped on resume reads the same record."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from genenv.config import GenEnvConfig
from genenv.curriculum.pools import GROUP_KINDS, Group, generation_rng, select_groups
from genenv.domains.base import AbstainingDomain, Domain, TaskInstance
from genenv.pipeline.context import GenerationRef, load_tasks
from genenv.pipeline.staging import read_staged, staging_path, write_staged
from genenv.warehouse.purposes import GROUP_PURPOSES, Purpose

RECORD = "agent-groups"
"""The staged record of the generation's drawn groups and whether each was trained (pipeline/staging.py)."""
RECORD_SCHEMA = pl.Schema(
    {
        "task_id": pl.String(),
        "purpose": pl.String(),
        "abstains": pl.Boolean(),
        "rewards": pl.List(pl.Float64),
        "success": pl.Float64(),
        "trained": pl.Boolean(),
        "why_not": pl.String(),
        "call_target": pl.Int64(),
    }
)


def call_target(ref: GenerationRef, fresh: dict[str, TaskInstance]) -> int:
    """The intended call groups of a generation whose fresh tasks are `fresh` (`intended_calls`)."""
    return intended_calls(ref.config, sum(not abstains(ref.domain, t) for t in fresh.values()))


def intended_calls(config: GenEnvConfig, fresh_calls: int) -> int:
    """The agent's batch in call groups: agent_call_groups, or where that is 0 one per fresh task that asks for an
    action (`fresh_calls`) plus pool_tasks_per_generation."""
    return config.agent_call_groups or fresh_calls + config.pool_tasks_per_generation


def abstains(domain: Domain, task: TaskInstance) -> bool:
    return isinstance(domain, AbstainingDomain) and domain.is_abstention(task)


def groups_of(ref: GenerationRef, rows: pl.DataFrame, known: dict[str, TaskInstance]) -> dict[str, Group]:
    """Each rolled-out task's GRPO group from scored rows (`reward`): its first rollouts_per_task rewards, and the
    share of all its answers that were solved."""
    config = ref.config
    success = dict(
        rows.group_by("task_id").agg((pl.col("reward") >= config.solved_threshold).mean().alias("s")).iter_rows()
    )
    first = rows.filter(pl.col("sample_index") < config.rollouts_per_task).sort("task_id", "sample_index")
    return {
        task_id: Group(
            Purpose(group["purpose"][0]), abstains(ref.domain, known[task_id]), tuple(group["reward"]), success[task_id]
        )
        for (task_id,), group in first.group_by("task_id", maintain_order=True)
    }


@dataclass(frozen=True)
class AgentBatch:
    """The generation's GRPO groups: all rolled out (`drawn`), and those the update trains on (`trained`)."""

    drawn: dict[str, Group]
    trained: list[str]
    call_target: int

    @property
    def zero_spread_drawn(self) -> float:
        return sum(not g.spread for g in self.drawn.values()) / len(self.drawn) if self.drawn else 0.0

    def kinds(self, ids: Iterable[str]) -> dict[str, int]:
        """How many of the groups `ids` are of each kind (fresh_call, fresh_abstain, pool_call, ...)."""
        found = Counter(self.drawn[i].kind for i in ids)
        return {kind: found[kind] for kind in GROUP_KINDS}


def group_rows(ref: GenerationRef) -> pl.DataFrame:
    """The generation's stored answers that form GRPO groups."""
    rows = ref.warehouse.read("trajectories", run_id=ref.run_id, generation=ref.generation)
    return rows.filter(pl.col("purpose").is_in(GROUP_PURPOSES)).sort("trajectory_id")


def select_batch(ref: GenerationRef, rows: pl.DataFrame) -> AgentBatch:
    """Every rolled-out group, and those GRPO trains on: with dynamic sampling only those whose rewards differ, up to
    the intended batch (`intended_calls`), and abstaining groups of any source as `abstention_share` of what is
    trained (curriculum.pools.select_groups)."""
    config = ref.config
    known = load_tasks(ref, rows["task_id"].unique().to_list())
    drawn = groups_of(ref, rows, known)
    target = call_target(ref, {i: known[i] for i, g in drawn.items() if g.purpose == Purpose.FRESH})
    rng = generation_rng(config.seed, ref.generation, "dense-groups")
    trained = select_groups(drawn, target, config.abstention_share, rng, dense=config.dynamic_sampling)
    return AgentBatch(drawn, trained, target)


def record_batch(ref: GenerationRef, batch: AgentBatch) -> None:
    """Stage the batch as finetune chose it: each drawn group, trained or why not (equal rewards carry no signal;
    beyond the batch: more qualified than the intended batch holds)."""
    trained = set(batch.trained)
    rows = [
        {
            "task_id": task_id,
            "purpose": str(group.purpose),
            "abstains": group.abstains,
            "rewards": list(group.rewards),
            "success": group.success,
            "trained": task_id in trained,
            "why_not": None if task_id in trained else "beyond the batch" if group.spread else "equal rewards",
            "call_target": batch.call_target,
        }
        for task_id, group in sorted(batch.drawn.items())
    ]
    write_staged(ref, RECORD, pl.DataFrame(rows, schema=RECORD_SCHEMA))


def recorded_batch(ref: GenerationRef) -> AgentBatch:
    """The batch finetune recorded for this generation; an error when it recorded none (finetune has not run)."""
    record = read_staged(staging_path(ref, RECORD))
    if record is None:
        raise RuntimeError(f"{ref.run_id} g{ref.generation}: finetune recorded no agent batch ({RECORD})")
    drawn = {
        r["task_id"]: Group(Purpose(r["purpose"]), r["abstains"], tuple(r["rewards"]), r["success"])
        for r in record.iter_rows(named=True)
    }
    target = int(record["call_target"][0]) if record.height else ref.config.pool_tasks_per_generation
    return AgentBatch(drawn, record.filter("trained")["task_id"].to_list(), target)
