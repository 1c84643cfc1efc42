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
from pathlib import Path
from typing import Any

import polars as pl
from prefect import flow, tags

from genenv.arms import BASE, GENERATION_ZERO, TRAIN, ArmPlan, generation_zero_differences, plan_arms
from genenv.config import ConfigError, config_from_dict, load_config
from genenv.errors import RerunError
from genenv.evaluation.registry import format_item_sizes
from genenv.evaluation.report import Comparison, Scored, comparison_report, shown_path
from genenv.flows.evaluate import benchmarks_to_score, evaluate
from genenv.flows.evolve import evolve
from genenv.flows.generation import run_generation
from genenv.flows.parameters import ConfigOverrides, override_values
from genenv.tasks.fork import copy_snapshot
from genenv.tasks.options import stage
from genenv.tasks.runs import new_run_id, register_run
from genenv.tasks.runtime import model_runtime
from genenv.warehouse.checkpoints import adapter_exists
from genenv.warehouse.store import Warehouse


@stage("fork-generation-zero")
def fork_generation_zero(warehouse_uri: str, parent_run_id: str, config: dict, run_id: str) -> str:
    """Run `run_id` with `config`, holding `parent_run_id`'s generation 0 (its rows, its adapters by reference).

    The caller then runs generations 1..config.generations in it. Unlike `genenv rerun` (tasks/fork.py), the fork
    keeps its own `generations`. Nothing is written into the parent; everything is checked before the first write;
    a retry completes what a failed attempt left.
    """
    warehouse = Warehouse(warehouse_uri)
    settings = config_from_dict(config)
    parent = warehouse.run(parent_run_id)
    snapshot = warehouse.committed(parent_run_id).filter(pl.col("generation") == 0)
    if snapshot.is_empty():
        raise RerunError(f"run {parent_run_id} has no committed generation 0 to fork from")
    row = snapshot.row(0, named=True)
    for role in ("agent", "simulator"):
        folder = row[f"{role}_checkpoint"]
        if not adapter_exists(folder):
            raise RerunError(f"the {role} checkpoint of {parent_run_id} generation 0 is missing: {folder}")
    differences = generation_zero_differences(config_from_dict(json.loads(parent["config_json"])), settings)
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
    return " ".join(parts)


def models_to_score(
    plans: list[ArmPlan], every_generation: bool = False
) -> list[tuple[str, tuple[str, ...], str | None, int | None]]:
    """(label, arms whose line it is on, arm whose run holds it or None for the base model, generation) per model.

    Generation 0 once (under the first arm that has a run: the shared run), each training arm's last generation
    (each of its generations with `every_generation`), then each base arm.
    """
    sharing = [plan for plan in plans if plan.role != BASE]
    out: list[tuple[str, tuple[str, ...], str | None, int | None]] = []
    if sharing:
        holder = next((plan for plan in sharing if plan.role == TRAIN), sharing[0])
        out.append(("g0", tuple(plan.arm for plan in sharing), holder.arm, 0))
    for plan in plans:
        if plan.role == TRAIN:
            last = plan.config.generations
            out += [
                (f"{plan.arm} g{g}", (plan.arm,), plan.arm, g)
                for g in (range(1, last + 1) if every_generation else [last])
            ]
    out += [(plan.arm, (plan.arm,), None, None) for plan in plans if plan.role == BASE]
    return out


def paired_labels(plans: list[ArmPlan]) -> list[tuple[str, str]]:
    """(B, A) for the report's paired differences B - A: each training arm's last generation - g0, genenv's last
    generation - each other training arm's, g0 - base."""
    training = [plan for plan in plans if plan.role == TRAIN]

    def last(plan: ArmPlan) -> str:
        return f"{plan.arm} g{plan.config.generations}"

    pairs = [(last(plan), "g0") for plan in training]
    genenv = next((plan for plan in training if plan.arm == "genenv"), None)
    if genenv is not None:
        pairs += [(last(genenv), last(plan)) for plan in training if plan is not genenv]
    if any(plan.role != BASE for plan in plans):
        pairs += [("g0", plan.arm) for plan in plans if plan.role == BASE]
    return pairs


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
) -> str:
    """Run the arms (generation 0 once), score the models, write the HTML report; returns the report path.

    Items per benchmark category: `items[category]` (0 leaves it out), else `limit`, else all; the same items for
    every model. Scored: generation 0, each training arm's last generation (every generation with
    `every_generation`), and base when it is an arm. A benchmark whose data is absent is skipped with a warning
    before any arm runs (`benchmarks_dir`: genenv/benchmark_data.py).
    """
    overrides = override_values(overrides)
    plans = plan_arms(arms, config_file, overrides)
    names = benchmarks_to_score(benchmarks, benchmarks_dir, items)
    training = [plan for plan in plans if plan.role == TRAIN]
    sharing = [plan for plan in plans if plan.role != BASE]
    warehouse_uri = plans[0].config.resolved_warehouse_uri

    with model_runtime():  # one set of models for every arm and every evaluation, released at the end
        runs: dict[str, str] = {}
        shared: str | None = None
        for plan in training:
            if shared is None:
                with tags(f"arm:{plan.arm}"):
                    shared = runs[plan.arm] = evolve(config=plan.config.to_dict())
                continue
            fork_id = fork_generation_zero(
                warehouse_uri, shared, plan.config.to_dict(), new_run_id(plan.config.run_name)
            )
            with tags(f"arm:{plan.arm}"):  # on the generation flow runs, for the UI's filter
                for generation in range(1, plan.config.generations + 1):
                    run_generation(warehouse_uri, fork_id, generation)
            runs[plan.arm] = fork_id
        if shared is None and sharing:
            shared = evolve(config=sharing[0].config.to_dict())
        for plan in sharing:
            if plan.role == GENERATION_ZERO:
                runs[plan.arm] = shared

        def scored(label: str, on: tuple[str, ...], arm: str | None, generation: int | None) -> Scored:
            run_id = runs[arm] if arm is not None else None
            model = next(plan.config.model for plan in plans if plan.arm == (arm or label))
            batch = evaluate(
                model=model,
                run_id=run_id,
                generation=generation,
                benchmarks=names,
                data_dir=benchmarks_dir,
                limit=limit,
                warehouse_uri=warehouse_uri,
                cache_dir=plans[0].config.data_dir,
                items=items,
            )
            return Scored(label, batch, run_id or "base", generation, on)

        models = [scored(*entry) for entry in models_to_score(plans, every_generation)]

    comparison = Comparison(
        title="GenEnv arms compared",
        command=command_line(arms, config_file, overrides, names, benchmarks_dir, limit, items, every_generation),
        config=load_config(config_file, overrides).to_dict(),
        arms=[(plan.arm, plan.role, runs.get(plan.arm), plan.overrides) for plan in plans],
        shared_run=shared,
        models=models,
        pairs=paired_labels(plans),
        items=dict(items or {}),
        limit=limit,
    )
    page = comparison_report(Warehouse(warehouse_uri), comparison)
    path = Path(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
    return str(path.resolve())
