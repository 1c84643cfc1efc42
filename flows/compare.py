"""Compare arms (GenEnv, GenEnv-Random, static augmentation, ...) at equal budgets and seeds.

Each arm is one evolve run from the same config plus the arm's overrides; every committed generation's
agent is scored on the benchmarks; the report charts them side by side.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from evaluation.report import comparison_charts, render_report
from flows.evaluate import evaluate
from flows.evolve import evolve
from genenv.arms import arm_overrides
from genenv.config import load_config
from warehouse.store import Warehouse


@flow(name="genenv-compare")
def compare(
    arms: list[str],
    config_file: str | None = None,
    overrides: dict[str, str] | None = None,
    benchmarks: list[str] | None = None,
    benchmarks_dir: str = "../shared/benchmarks",
    limit: int | None = None,
    report: str = "data/reports/compare.html",
) -> str:
    """Run every arm, evaluate each of its generations, write the HTML report; returns the report path."""
    plans = {arm: {**(overrides or {}), **arm_overrides(arm)} for arm in arms}
    configs = {arm: load_config(config_file, plan) for arm, plan in plans.items()}
    runs = {}
    for arm, config in configs.items():
        run_id = evolve(config={**config.to_dict(), "run_name": f"{config.run_name}-{arm}"})
        runs[arm] = run_id
        for generation in range(config.generations + 1):
            evaluate(
                run_id=run_id,
                generation=generation,
                benchmarks=benchmarks,
                data_dir=benchmarks_dir,
                limit=limit,
                warehouse_uri=config.resolved_warehouse_uri,
                cache_dir=config.data_dir,
            )
    warehouse = Warehouse(next(iter(configs.values())).resolved_warehouse_uri)
    notes = [f"{arm}: overrides {plan or 'none'}" for arm, plan in plans.items()]
    notes.append(f"benchmark items per category: {limit or 'all'}")
    page = render_report("GenEnv arms compared", runs, comparison_charts(warehouse, runs), notes)
    path = Path(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
    return str(path.resolve())
