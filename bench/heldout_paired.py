"""Held-out seed success of each run in a warehouse: generation 0 against its last generation, paired over the same
held-out tasks, with a 95% percentile bootstrap interval of the difference.

    python bench/heldout_paired.py data/laptop/warehouse
"""

from __future__ import annotations

import argparse
import random

from genenv.warehouse.store import Warehouse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("warehouse")
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    heldout = Warehouse(args.warehouse).read("trajectories").filter(purpose="heldout")
    for run_id in sorted(heldout["run_id"].unique()):
        rows = heldout.filter(run_id=run_id)
        last = rows["generation"].max()
        first = dict(rows.filter(generation=0).select("task_id", "solved").iter_rows())
        final = dict(rows.filter(generation=last).select("task_id", "solved").iter_rows())
        ids = sorted(first.keys() & final.keys())
        diffs = [int(final[i]) - int(first[i]) for i in ids]
        rng = random.Random(0)
        means = sorted(sum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(args.resamples))
        low, high = means[int(0.025 * args.resamples)], means[int(0.975 * args.resamples) - 1]
        g0 = sum(first[i] for i in ids) / len(ids)
        gl = sum(final[i] for i in ids) / len(ids)
        print(
            f"{run_id}: {len(ids)} held-out tasks, g0 {g0:.3f}, g{last} {gl:.3f}, "
            f"difference {gl - g0:+.3f} [{low:+.3f}, {high:+.3f}]"
        )


if __name__ == "__main__":
    main()
