"""What every stage needs: the generation it works on, the run's config, and the loaded models.

Stages receive a `GenerationRef` from the flow: the run, the generation and the warehouse, the run's stored config
and domain, read once per generation, and the flow's model runtime (runtime/handle.py). The runtime keys its
models by the checkpoints they were loaded from, so consecutive stages and generations reuse them instead of
reloading.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import polars as pl
from deltalake import DeltaTable

from genenv.config import GenEnvConfig
from genenv.curriculum.pools import draw, generation_rng, sampling_seed
from genenv.domains.base import Domain, TaskInstance, get_domain
from genenv.errors import WarehouseError
from genenv.models.sampling import SamplingSettings
from genenv.pipeline.artifacts import StageProgress
from genenv.runtime.handle import ModelRuntime
from genenv.warehouse.purposes import Purpose
from genenv.warehouse.store import Warehouse


@dataclass
class RunSettings:
    """The run's stored config and its domain, read on first use and shared by every reference to the generation
    (each stage's copy), so a generation reads them once; no process-wide cache."""

    config: GenEnvConfig | None = None
    domain: Domain | None = None


class UndeclaredTable(WarehouseError):
    """A stage touched a table its contract (`generation_stage`'s reads= and writes=) does not name."""


@dataclass(frozen=True)
class Declared:
    """What one stage declares it reads and writes (`generation_stage`): the only tables its warehouse serves."""

    stage: str
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


class DeclaredTables(Warehouse):
    """The warehouse as one stage sees it: the tables it declares, at the versions handed on; any other fails, and
    a table it only reads cannot be written."""

    def __init__(self, root_uri: str, pinned: Mapping[str, int], declared: Declared) -> None:
        super().__init__(root_uri, pinned)
        self.declared = declared

    def _refuse(self, table: str, allowed: tuple[str, ...], use: str) -> None:
        if table not in allowed:
            d = self.declared
            raise UndeclaredTable(
                f"stage {d.stage} {use} table {table!r}, which its contract does not allow (reads={list(d.reads)}, "
                f"writes={list(d.writes)})"
            )

    def table(self, table: str, version: int | None = None) -> DeltaTable | None:
        self._refuse(table, (*self.declared.reads, *self.declared.writes), "uses")
        return super().table(table, version)

    def append(self, table: str, rows: list[dict[str, Any]] | pl.DataFrame) -> int | None:
        self._refuse(table, self.declared.writes, "writes")
        return super().append(table, rows)


@dataclass(frozen=True)
class GenerationRef:
    """What the flow hands every stage: which run, which generation, which warehouse, the flow's models, and, read
    once on first use, the run's stored config and its domain."""

    warehouse_uri: str
    run_id: str
    generation: int
    runtime: ModelRuntime = field(compare=False, repr=False)
    versions: Mapping[str, int] = field(default_factory=dict, compare=False)
    """The Delta version of each table as this generation's earlier stages left it: what a stage reads them at."""
    declared: Declared | None = field(default=None, compare=False)
    """Inside a stage, the tables it declares, the only ones its warehouse serves; None outside: every table."""
    run: RunSettings = field(default_factory=RunSettings, compare=False, repr=False)

    @property
    def warehouse(self) -> Warehouse:
        if self.declared is None:
            return Warehouse(self.warehouse_uri, pinned=self.versions)
        return DeclaredTables(self.warehouse_uri, self.versions, self.declared)

    @property
    def config(self) -> GenEnvConfig:
        """The run's stored config: what every stage is given, whatever tables it declares."""
        if self.run.config is None:
            self.run.config = Warehouse(self.warehouse_uri).run_config(self.run_id)
        return self.run.config

    @property
    def domain(self) -> Domain:
        if self.run.domain is None:
            self.run.domain = get_domain(self.config.domain, self.config)
        return self.run.domain

    def key(self, *parts: object) -> str:
        """Stable ids for rows this generation writes: '<run>/g<g>/...'."""
        return "/".join([self.run_id, f"g{self.generation}", *map(str, parts)])


def task_generation(ref: GenerationRef) -> int:
    """The generation whose simulator tasks this generation trains on: its own, or 1 with static tasks."""
    return 1 if ref.config.static_tasks and ref.generation > 1 else ref.generation


def task_from_row(row: dict[str, Any]) -> TaskInstance:
    return TaskInstance(
        task_id=row["task_id"], spec=json.loads(row["spec_json"]), answer=row["answer"], family=row["family"]
    )


def load_tasks(ref: GenerationRef, task_ids: list[str] | None = None) -> dict[str, TaskInstance]:
    """Valid task instances of this run (seeds and generated), by id."""
    rows = ref.warehouse.read("tasks", run_id=ref.run_id).filter(valid=True)
    if task_ids is not None:
        rows = rows.filter(rows["task_id"].is_in(task_ids))
    return {row["task_id"]: task_from_row(row) for row in rows.sort("task_id").iter_rows(named=True)}


def subset(tasks: dict[str, TaskInstance], task_ids: list[str]) -> dict[str, TaskInstance]:
    """Some of the tasks already loaded, in `load_tasks` order (by id), without reading the table again."""
    return {task_id: tasks[task_id] for task_id in sorted(set(task_ids)) if task_id in tasks}


def heldout_seeds(ref: GenerationRef, known: dict[str, TaskInstance]) -> list[TaskInstance]:
    """The held-out seeds (valid ones), from tasks already loaded."""
    rows = ref.warehouse.read("tasks", run_id=ref.run_id, generation=0).filter(heldout=True, valid=True)
    return list(subset(known, rows["task_id"].to_list()).values())


def fresh_tasks(
    ref: GenerationRef, known: dict[str, TaskInstance], origin: str = "simulator"
) -> dict[str, TaskInstance]:
    """This generation's valid simulator tasks (generation 1's with static tasks), or its abstention tasks with
    origin="abstention", from tasks already loaded."""
    rows = ref.warehouse.read("tasks", run_id=ref.run_id, generation=task_generation(ref))
    return subset(known, rows.filter(valid=True, origin=origin)["task_id"].to_list())


def earlier_sampled_answers(ref: GenerationRef) -> pl.DataFrame:
    """The agent's sampled answers to fresh and pool tasks in the run's earlier generations: what the family hint and
    the seed draw (generate) and the replay draw (rollout) read the agent's recent success from."""
    return ref.warehouse.read("trajectories", run_id=ref.run_id).filter(
        pl.col("purpose").is_in([Purpose.FRESH, Purpose.POOL]), pl.col("generation") < ref.generation
    )


def last_success(answers: pl.DataFrame, task_ids: list[str]) -> dict[str, float]:
    """Each task's share of solved answers in the last earlier generation that answered it as a fresh or pool task
    (`answers`: `earlier_sampled_answers`, read once by a stage that needs it twice)."""
    rows = answers.filter(pl.col("task_id").is_in(task_ids))
    latest = rows.filter(pl.col("generation") == pl.col("generation").max().over("task_id"))
    return dict(latest.group_by("task_id").agg(pl.col("solved").cast(pl.Float64).mean()).iter_rows())


def probe_set(ref: GenerationRef, fresh: dict[str, TaskInstance]) -> list[TaskInstance]:
    """A fixed sample of the fresh tasks, answered greedily before and after the agent's update, so what the
    update did is one number (probe_after - probe_before)."""
    rng = generation_rng(ref.config.seed, ref.generation, "probe")
    return draw(list(fresh.values()), ref.config.probe_tasks, rng)


ROUND_SEED_STRIDE = 104_729
"""Each round of dynamic sampling samples with its own seed (the generation's + round x this prime)."""


def agent_sampling(config: GenEnvConfig, generation: int, round_: int = 0) -> SamplingSettings:
    """How the agent samples its rollouts (each round of dynamic sampling with its own seed)."""
    return SamplingSettings(
        max_new_tokens=config.agent_max_new_tokens,
        temperature=config.agent_temperature,
        top_p=config.agent_top_p,
        seed=sampling_seed(config.seed, generation, "agent") + round_ * ROUND_SEED_STRIDE,
    )


def simulator_sampling(config: GenEnvConfig, generation: int) -> SamplingSettings:
    """How the simulator samples the generation's tasks."""
    return SamplingSettings(
        max_new_tokens=config.simulator_max_new_tokens,
        temperature=config.simulator_temperature,
        top_p=config.simulator_top_p,
        seed=sampling_seed(config.seed, generation, "simulator"),
    )


def greedy_sampling(config: GenEnvConfig) -> SamplingSettings:
    """How the agent is measured (held-out seeds, probes): greedy, so a score moves only when the model does."""
    return SamplingSettings(max_new_tokens=config.agent_max_new_tokens, temperature=0.0, seed=config.seed)


def pool_ids(ref: GenerationRef, pool: str, through_generation: int) -> list[str]:
    """D_train or D_env membership as of a generation, in the order tasks joined."""
    rows = ref.warehouse.read("pool", run_id=ref.run_id).filter(pool=pool)
    rows = rows.filter(rows["generation"] <= through_generation)
    return rows.sort("generation", "task_id")["task_id"].to_list()


@contextmanager
def progress_bar(description: str, total: int, unit: str = "row") -> Iterator[StageProgress]:
    """A terminal progress bar that is also a Prefect progress artifact inside a run."""
    with StageProgress(total=total, desc=description, unit=unit, leave=False, dynamic_ncols=True) as bar:
        yield bar
