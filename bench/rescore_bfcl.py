"""Re-score stored BFCL answers with today's checker, without generating again.

The `evaluation_items` table keeps every answer a model wrote. When the checker changes (as it did when it was made
to agree with the official one, tests/support/bfcl_agreement.py), this prints the old stored score and the score
under the current checker, per model and category, with 95% bootstrap intervals, and the paired difference of each
trained model against a reference one (generation 0 by default).

    python bench/rescore_bfcl.py --warehouse data/compare/warehouse
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from genenv.domains.tool_call.checker import check
from genenv.evaluation.benchmark_registry import get_benchmark
from genenv.evaluation.bootstrap import Interval, bootstrap_mean, paired_difference
from genenv.warehouse.store import Warehouse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--data", help="a benchmarks folder holding bfcl/ (default: the bfcl-eval package)")
    args = parser.parse_args()

    warehouse = Warehouse(args.warehouse)
    evaluations = warehouse.read("evaluations").filter(benchmark="bfcl")
    items = warehouse.read("evaluation_items").filter(benchmark="bfcl")
    references = {item.item_id: item.reference for item in get_benchmark("bfcl").load(args.data)}
    model_of = {row["eval_id"]: (row["run_id"], row["generation"]) for row in evaluations.iter_rows(named=True)}

    stored: dict[tuple, dict[str, float]] = defaultdict(dict)
    current: dict[tuple, dict[str, float]] = defaultdict(dict)
    for row in items.iter_rows(named=True):
        key = (*model_of[row["eval_id"]], row["category"])
        reference = references[row["item_id"]]
        verdict = check(row["category"], reference["functions"], row["output"], reference["ground_truth"])
        stored[key][row["item_id"]] = row["score"]
        current[key][row["item_id"]] = float(verdict.valid)

    print("| run | generation | category | n | stored score | current checker [95% CI] |")
    print("|---|---:|---|---:|---:|---|")
    for key in sorted(current):
        old = bootstrap_mean(list(stored[key].values()))
        new = bootstrap_mean(list(current[key].values()))
        print(f"| {key[0]} | {key[1]} | {key[2]} | {new.n} | {old.value:.3f} | {_interval(new, '')} |")

    print("\n| run | generation | category | minus generation 0 (paired, current checker) [95% CI] |")
    print("|---|---:|---|---|")
    zero = {category: scores for (_, generation, category), scores in current.items() if generation == 0}
    for (run_id, generation, category), scores in sorted(current.items()):
        if generation != 0 and category in zero:
            difference = paired_difference(zero[category], scores)
            print(f"| {run_id} | {generation} | {category} | {_interval(difference, '+')} |")


def _interval(interval: Interval, sign: str) -> str:
    return f"{interval.value:{sign}.3f} [{interval.low:{sign}.3f}, {interval.high:{sign}.3f}]"


if __name__ == "__main__":
    main()
