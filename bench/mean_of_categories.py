"""Paired BFCL differences of a comparison's runs, per category and on the mean of the three categories, pooled over
the run seeds with a hierarchical bootstrap (seeds, then items within each category; evaluation/bootstrap.py):

- each arm's last generation against generation 0 (g0 is the shared parent's, scored once);
- the first arm against the second (GenEnv - GenEnv-Random), seed by seed.

    python bench/mean_of_categories.py WAREHOUSE --prefix c45 [--arms genenv,genenv-random] [--generation 8]

The runs are `genenv compare --seeds` runs named '<prefix>-<arm>-s<seed>-...'. Prints each seed's own score too.
"""

import argparse

import numpy as np
import polars as pl

from genenv.evaluation.bootstrap import seeds_and_items
from genenv.warehouse.query import query
from genenv.warehouse.store import Warehouse

CATEGORIES = ("simple_python", "multiple", "irrelevance")
SQL = """
SELECT DISTINCT e.run_id, e.generation, i.category, i.item_id, i.score
FROM evaluation_items i JOIN evaluations e USING (eval_id)
WHERE i.category IN ('simple_python', 'multiple', 'irrelevance') AND e.benchmark = 'bfcl'
"""


def scores(frame: pl.DataFrame, run_id: str, generation: int, category: str) -> dict[str, float]:
    rows = frame.filter(run_id=run_id, generation=generation, category=category)
    return dict(rows.select("item_id", "score").iter_rows())


def differences(pairs: list[tuple[dict[str, float], dict[str, float]]]) -> np.ndarray:
    """[seeds, items] of b - a over the items every model scored."""
    common = sorted(set.intersection(*(set(a) & set(b) for a, b in pairs)))
    return np.array([[b[i] - a[i] for i in common] for a, b in pairs])


def report(label: str, per_category: dict[str, np.ndarray]) -> None:
    for category, d in per_category.items():
        i = seeds_and_items([d])
        seeds = " / ".join(f"{row.mean():+.3f}" for row in d)
        print(f"{label}, {category}: {i.value:+.3f} [{i.low:+.3f}, {i.high:+.3f}] (seeds {seeds})")
    i = seeds_and_items(list(per_category.values()))
    print(f"{label}, mean of the three: {i.value:+.3f} [{i.low:+.3f}, {i.high:+.3f}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("warehouse")
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--arms", default="genenv,genenv-random")
    parser.add_argument("--generation", type=int, default=8)
    args = parser.parse_args()
    warehouse = Warehouse(args.warehouse)
    frame = query(warehouse, SQL)
    runs = warehouse.read("runs").select("run_id", "parent_run_id")
    arms = args.arms.split(",")
    by_arm: dict[str, dict[int, str]] = {arm: {} for arm in arms}
    for run_id, parent in runs.iter_rows():
        for arm in arms:
            rest = run_id.removeprefix(f"{args.prefix}-{arm}-s")
            if rest != run_id and rest.split("-")[0].isdigit():
                by_arm[arm][int(rest.split("-")[0])] = run_id
                g0 = parent
    seeds = sorted(set.intersection(*(set(runs_) for runs_ in by_arm.values())))
    print(f"seeds {seeds}; generation 0 from {g0}")
    for category in CATEGORIES:
        line = [f"g0 {np.mean(list(scores(frame, g0, 0, category).values())):.3f}"]
        for arm in arms:
            each = [np.mean(list(scores(frame, by_arm[arm][s], args.generation, category).values())) for s in seeds]
            line.append(f"{arm} " + " / ".join(f"{v:.3f}" for v in each))
        print(f"{category}: " + " | ".join(line))
    final = {arm: [by_arm[arm][s] for s in seeds] for arm in arms}

    def paired(a_runs: list[str], a_generation: int, b_runs: list[str]) -> dict[str, np.ndarray]:
        return {
            c: differences(
                [
                    (scores(frame, a, a_generation, c), scores(frame, b, args.generation, c))
                    for a, b in zip(a_runs, b_runs, strict=True)
                ]
            )
            for c in CATEGORIES
        }

    for arm in arms:
        report(f"{arm} g{args.generation} - g0", paired([g0] * len(seeds), 0, final[arm]))
    if len(arms) == 2:
        report(f"{arms[0]} - {arms[1]}", paired(final[arms[1]], args.generation, final[arms[0]]))


if __name__ == "__main__":
    main()
