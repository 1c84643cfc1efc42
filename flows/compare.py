"""Compare arms (GenEnv, GenEnv-Random, static augmentation, warm-start-only, base) at equal budgets and seeds.

Generation 0 (seed set, warm start) is run once and shared: the first arm that trains generations is an evolve run
of the config; every other training arm is a fork of that run's generation-0 snapshot with its overrides (its rows
and adapters, read-only: no second warm start) that runs generations 1..T. warm-start-only IS that generation 0;
base is the model without adapters. All arms share one config, so seeds and the agent's sample budget are equal.

Scored: generation 0 once, each training arm's last generation (or, with `every_generation`, each of its
generations), and base when asked, all on the same fixed sample of benchmark items, each score with a 95% bootstrap
interval over the items; the report adds paired intervals of differences (each arm vs generation 0, genenv vs the
other arms).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from prefect import flow, get_run_logger, tags

from genenv.arms import BASE, GENERATION_ZERO, TRAIN, ArmPlan, generation_zero_differences, plan_arms
from genenv.config import ConfigError, GenEnvConfig, config_from_dict, load_config, resume_differences
from genenv.errors import RerunError
from genenv.evaluation.benchmark_registry import format_item_sizes
from genenv.evaluation.report import Comparison, Pair, ScoredModel, comparison_report, shown_path
from genenv.flows.evaluate import benchmarks_to_score, evaluate
from genenv.flows.evolve import evolve
from genenv.flows.generation import run_generation
from genenv.parameters import ConfigOverrides, override_values
from genenv.pipeline.options import stage
from genenv.pipeline.run_records import new_run_id, register_run
from genenv.runtime.handle import ModelRuntime, model_runtime
from genenv.tasks.benchmarks import earlier_evaluation
from genenv.tasks.fork import copy_snapshot
from genenv.validation import validate_plans
from genenv.warehouse.checkpoints import adapter_exists
from genenv.warehouse.store import Warehouse, registered_config


@stage("fork-generation-zero")
def fork_generation_zero(warehouse_uri: str, parent_run_id: str, config: dict, run_id: str) -> str:
    """Run `run_id` with `config`, holding `parent_run_id`'s generation 0 (its rows, its adapters by reference).

    The caller then runs generations 1..config.generations in it. Unlike `genenv rerun` (tasks/fork.py), the fork
    keeps its own `generations`. Nothing is written into the parent; everything is checked before the first write;
    a retry completes what a failed attempt left.
    """
    warehouse = Warehouse(warehouse_uri)
    settings = config_from_dict(config)
    parent = warehouse.run_config(parent_run_id)  # a missing parent fails here, before anything is written
    snapshot = warehouse.committed(parent_run_id).filter(pl.col("generation") == 0)
    if snapshot.is_empty():
        raise RerunError(f"run {parent_run_id} has no committed generation 0 to fork from")
    row = snapshot.row(0, named=True)
    for role in ("agent", "simulator"):
        folder = row[f"{role}_checkpoint"]
        if not adapter_exists(folder):
            raise RerunError(f"the {role} checkpoint of {parent_run_id} generation 0 is missing: {folder}")
    differences = generation_zero_differences(parent, settings)
    if differences:
        raise ConfigError(f"cannot share generation 0 of {parent_run_id}: the fork changes {differences}")
    if warehouse.read("runs", run_id=run_id).is_empty():
        register_run(warehouse, settings, run_id, parent=(parent_run_id, 0))
    copy_snapshot(warehouse, parent_run_id, run_id, 0)
    return run_id


def command_line(
    arms: list[str],
    config_file: str | None,
    overrides: dict[str, Any] | None,
    benchmarks: list[str],
    benchmarks_dir: str | None,
    limit: int | None,
    items: dict[str, int] | None,
    every_generation: bool,
    seeds: list[int] | None = None,
    from_run: str | None = None,
) -> str:
    """The `genenv compare` command that runs this comparison (paths as the report shows them)."""
    parts = ["genenv compare", f"--arms {','.join(arms)}"]
    if config_file:
        parts.append(f"--config {shown_path(config_file)}")
    for name, value in (overrides or {}).items():
        parts.append(f"--set {name}={shown_path(value if isinstance(value, str) else json.dumps(value))}")
    parts.append(f"--benchmarks {','.join(benchmarks)}")
    if benchmarks_dir:
        parts.append(f"--benchmarks-dir {shown_path(benchmarks_dir)}")
    if items:
        parts.append(f"--items {format_item_sizes(items)}")
    if limit is not None:
        parts.append(f"--limit {limit}")
    if every_generation:
        parts.append("--every-generation")
    if seeds:
        parts.append(f"--seeds {','.join(map(str, seeds))}")
    if from_run:
        parts.append(f"--from-run {from_run}")
    return " ".join(parts)


def models_to_score(
    plans: list[ArmPlan], every_generation: bool = False
) -> list[tuple[str, tuple[str, ...], str | None, int | None]]:
    """(label, arm lines it is on, key of the run that holds it or None for the base model, generation) per model.

    Generation 0 once (key "g0": the shared run), each training arm's last generation (each of its generations with
    `every_generation`), per seed, then each base arm. Keys are plan labels, "g0" for the shared run.
    """
    sharing = [plan for plan in plans if plan.role != BASE]
    out: list[tuple[str, tuple[str, ...], str | None, int | None]] = []
    if sharing:
        out.append(("g0", tuple(plan.label for plan in sharing), "g0", 0))
    for plan in plans:
        if plan.role == TRAIN:
            last = plan.config.generations
            out += [
                (f"{plan.label} g{g}", (plan.label,), plan.label, g)
                for g in (range(1, last + 1) if every_generation else [last])
            ]
    out += [(plan.label, (plan.label,), None, None) for plan in plans if plan.role == BASE]
    return out


def comparison_pairs(plans: list[ArmPlan]) -> list[Pair]:
    """The report's differences B - A: each training arm's last generation - g0, genenv's last generation - each
    other training arm's (seed by seed, pooled over the seeds), g0 - base."""
    by_arm: dict[str, list[ArmPlan]] = {}
    for plan in plans:
        if plan.role == TRAIN:
            by_arm.setdefault(plan.arm, []).append(plan)

    def last(plan: ArmPlan) -> str:
        return f"{plan.label} g{plan.config.generations}"

    def name(seeds: list[ArmPlan]) -> str:
        return f"{seeds[0].arm} g{seeds[0].config.generations}"

    pairs = [Pair(name(seeds), "g0", tuple((last(p), "g0") for p in seeds)) for seeds in by_arm.values()]
    genenv = by_arm.get("genenv")
    if genenv is not None:
        pairs += [
            Pair(name(genenv), name(other), tuple((last(g), last(o)) for g, o in zip(genenv, other, strict=True)))
            for arm, other in by_arm.items()
            if arm != "genenv"
        ]
    if any(plan.role != BASE for plan in plans):
        pairs += [Pair.of("g0", plan.label) for plan in plans if plan.role == BASE]
    return pairs


def check_shared_run(warehouse: Warehouse, run_id: str, sharing: list[ArmPlan]) -> None:
    """`--from-run` before anything runs: the run exists, has a committed generation 0, and the arms could share it."""
    if warehouse.read("runs", run_id=run_id).is_empty():
        raise ConfigError(f"from_run: no run {run_id!r} in the warehouse at {warehouse.root_uri}")
    if warehouse.committed(run_id).filter(pl.col("generation") == 0).is_empty():
        raise ConfigError(f"from_run: run {run_id} has no committed generation 0 to share")
    stored = warehouse.run_config(run_id)
    for plan in sharing:
        differences = generation_zero_differences(stored, plan.config)
        if differences:
            raise ConfigError(
                f"from_run: {plan.label} changes {differences}, which {run_id}'s generation 0 was made with"
            )


def continued_run(warehouse: Warehouse, shared: str, config: GenEnvConfig) -> str | None:
    """The run an interrupted comparison left for this arm: `shared` itself or a fork of its generation 0 that could
    resume as `config` (the same settings but names, paths and the number of generations: resume_differences); the
    oldest when there are several."""
    runs = warehouse.read("runs").filter(
        (pl.col("run_id") == shared) | ((pl.col("parent_run_id") == shared) & (pl.col("parent_generation") == 0))
    )
    same = [
        run["run_id"]
        for run in runs.sort("created_at").iter_rows(named=True)
        if not resume_differences(registered_config(run), config)
    ]
    return same[0] if same else None


def arm_run(warehouse_uri: str, plan: ArmPlan, shared: str, runtime: ModelRuntime) -> str:
    """The arm's run, forked from `shared`'s generation 0 or continued where an earlier attempt stopped, with its
    missing generations run."""
    warehouse = Warehouse(warehouse_uri)
    run_id = continued_run(warehouse, shared, plan.config) or fork_generation_zero(
        warehouse_uri, shared, plan.config.to_dict(), new_run_id(plan.config.run_name)
    )
    committed = set(warehouse.committed(run_id)["generation"])
    with tags(f"arm:{plan.arm}"):  # on the generation flow runs, for the UI's filter
        for generation in range(1, plan.config.generations + 1):
            if generation not in committed:
                run_generation(warehouse_uri, run_id, generation, runtime)
    return run_id


def first_arm_run(plan: ArmPlan, runtime: ModelRuntime) -> str:
    """The first training arm's run: an evolve run of its config, whose generation 0 the other arms share."""
    with tags(f"arm:{plan.arm}"):
        run_id = evolve(config=plan.config.to_dict(), runtime=runtime)
    get_run_logger().info(f"generation 0 is {run_id}'s: to continue this comparison, add --from-run {run_id}")
    return run_id


def arm_runs(
    warehouse_uri: str, plans: list[ArmPlan], from_run: str | None, runtime: ModelRuntime
) -> dict[str, str | None]:
    """Each arm's run by label, and "g0": the run whose generation 0 they share (None with base arms alone).
    Generation 0 is `from_run`'s, else the first training arm's own run's, else (no arm trains) a run of it alone;
    every other training arm forks it and runs its generations; warm-start-only is that generation 0."""
    training = [plan for plan in plans if plan.role == TRAIN]
    sharing = [plan for plan in plans if plan.role != BASE]
    if from_run is not None:  # generation 0 given: every training arm forks it
        shared: str | None = from_run
        runs = {plan.label: arm_run(warehouse_uri, plan, from_run, runtime) for plan in training}
    elif training:  # the first training arm's own run makes generation 0; the others fork it
        first, *others = training
        shared = first_arm_run(first, runtime)
        runs = {first.label: shared, **{plan.label: arm_run(warehouse_uri, plan, shared, runtime) for plan in others}}
    else:  # no arm trains: generation 0 alone, when an arm shares it
        shared = evolve(config=sharing[0].config.to_dict(), runtime=runtime) if sharing else None
        runs = {}
    return {**runs, "g0": shared, **{plan.label: shared for plan in sharing if plan.role == GENERATION_ZERO}}


@dataclass(frozen=True)
class ItemSample:
    """What every model of a comparison is scored on: the same items of the same benchmarks."""

    benchmarks: list[str]
    benchmarks_dir: str | None
    items: dict[str, int] | None
    limit: int | None

    def earlier(self, warehouse: Warehouse, run_id: str, generation: int | None) -> str | None:
        """An evaluation batch that already scored the run's agent at `generation` on these items."""
        chosen = (self.benchmarks, self.benchmarks_dir, self.items, self.limit)
        return earlier_evaluation(warehouse, run_id, generation, *chosen)

    def options(self) -> dict[str, Any]:
        """`evaluate`'s arguments that choose the items."""
        return {
            "benchmarks": self.benchmarks,
            "data_dir": self.benchmarks_dir,
            "items": self.items,
            "limit": self.limit,
        }


def score_model(
    entry: tuple[str, tuple[str, ...], str | None, int | None],
    runs: dict[str, str | None],
    sample: ItemSample,
    config: GenEnvConfig,
    runtime: ModelRuntime,
) -> ScoredModel:
    """One model of `models_to_score`, scored on `sample` (or its earlier evaluation of the same items) with the
    base model, data folder and warehouse of `config`, which every arm shares."""
    label, on, key, generation = entry
    run_id = runs[key] if key is not None else None
    warehouse_uri = config.resolved_warehouse_uri
    earlier = run_id and sample.earlier(Warehouse(warehouse_uri), run_id, generation)
    where: dict[str, Any] = {"warehouse_uri": warehouse_uri, "cache_dir": config.data_dir, "runtime": runtime}
    batch = earlier or evaluate(config.model, run_id, generation, **where, **sample.options())
    return ScoredModel(label, batch, run_id or "base", generation, on)


@flow(name="genenv-compare")
def compare(
    arms: list[str],
    config_file: str | None = None,
    overrides: ConfigOverrides | None = None,
    benchmarks: list[str] | None = None,
    benchmarks_dir: str | None = None,
    limit: int | None = None,
    report: str = "data/reports/compare.html",
    items: dict[str, int] | None = None,
    every_generation: bool = False,
    seeds: list[int] | None = None,
    from_run: str | None = None,
) -> str:
    """Run the arms (generation 0 once), score the models, write the HTML report; returns the report path.

    Items per benchmark category: `items[category]` (0 leaves it out), else `limit`, else all; the same items for
    every model. Scored: generation 0, each training arm's last generation (every generation with
    `every_generation`), and base when it is an arm. A benchmark whose data is absent is skipped with a warning
    before any arm runs (`benchmarks_dir`: genenv/benchmark_data.py).

    `seeds`: each training arm runs once per seed, all from the one generation 0; the report pools the paired
    differences over them. `from_run`: share that run's generation 0 instead of making one. Run again with the same
    arguments and `from_run`, a comparison continues: an arm whose run exists goes on from its last committed
    generation, and a model already scored on the same items is not scored again.
    """
    changes = override_values(overrides)
    plans = validate_plans(plan_arms(arms, config_file, changes, seeds))
    sample = ItemSample(benchmarks_to_score(benchmarks, benchmarks_dir, items), benchmarks_dir, items, limit)
    shared_config = plans[0].config  # every arm's base model, data folder and warehouse
    warehouse = Warehouse(shared_config.resolved_warehouse_uri)
    if from_run is not None:
        check_shared_run(warehouse, from_run, [plan for plan in plans if plan.role != BASE])
    with model_runtime(shared_config.placement) as models:  # for every arm and evaluation, released at the end
        runs = arm_runs(shared_config.resolved_warehouse_uri, plans, from_run, models)
        scores = [score_model(e, runs, sample, shared_config, models) for e in models_to_score(plans, every_generation)]
    command = command_line(
        arms, config_file, changes, sample.benchmarks, benchmarks_dir, limit, items, every_generation, seeds, from_run
    )
    comparison = Comparison(
        title="GenEnv arms compared",
        command=command,
        config=load_config(config_file, changes).to_dict(),
        arms=[(plan.label, plan.role, runs.get(plan.label), plan.overrides) for plan in plans],
        shared_run=runs["g0"],
        models=scores,
        pairs=comparison_pairs(plans),
        items=dict(items or {}),
        limit=limit,
    )
    path = Path(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(comparison_report(warehouse, comparison))
    return str(path.resolve())
