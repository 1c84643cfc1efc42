"""Held-out seed success of each run in a warehouse: generation 0 against its last generation, paired over the same
held-out tasks, with a 95% percentile bootstrap interval of the difference. A fork's generation 0 is its parent's.
With `--against RUN`, every other run's last generation is also paired with RUN's last generation. Each line is
followed by the same comparison over the held-out abstentions (answer `[]`) and over the tasks that need a call.

    python bench/heldout_paired.py data/laptop/warehouse [--against RUN_ID] [--generation G] [--smoke]
"""

from __future__ import annotations

import argparse
import random

import polars as pl
from options import add_smoke_option, parsed  # bench/ is the script's folder

from genenv.warehouse.purposes import Purpose
from genenv.warehouse.store import Warehouse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("warehouse")
    parser.add_argument("--against", help="a run whose last generation every other run's is paired with")
    parser.add_argument("--generation", type=int, help="compare this generation instead of each run's last")
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parsed(add_smoke_option(parser), resamples=200)
    warehouse = Warehouse(args.warehouse)
    heldout = warehouse.read("trajectories").filter(purpose=Purpose.HELDOUT)
    parents = dict(warehouse.read("runs").select("run_id", "parent_run_id").iter_rows())
    abstentions = set(warehouse.read("tasks").filter(pl.col("heldout") & (pl.col("answer") == "[]"))["task_id"])

    def solved(run_id: str, generation: int) -> dict[str, int]:
        while generation == 0 and parents.get(run_id):  # a fork shares its parent's generation 0
            run_id = parents[run_id]
        rows = heldout.filter((pl.col("run_id") == run_id) & (pl.col("generation") == generation))
        return {task: int(value) for task, value in rows.select("task_id", "solved").iter_rows()}

    def compared(label: str, first: dict[str, int], final: dict[str, int]) -> str:
        ids = sorted(first.keys() & final.keys())
        lines = [paired(label, ids, first, final)]
        for kind, keep in (("abstentions", True), ("calls", False)):
            part = [i for i in ids if (i in abstentions) == keep]
            lines.append(paired(f"  {kind}", part, first, final))
        return "\n".join(lines)

    def paired(label: str, ids: list[str], first: dict[str, int], final: dict[str, int]) -> str:
        if not ids:
            return f"{label}: no held-out task scored in both"
        diffs = [final[i] - first[i] for i in ids]
        rng = random.Random(0)
        means = sorted(sum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(args.resamples))
        low, high = means[int(0.025 * args.resamples)], means[int(0.975 * args.resamples) - 1]
        before, after = (sum(d[i] for i in ids) / len(ids) for d in (first, final))
        interval = f"[{low:+.3f}, {high:+.3f}]"
        return f"{label}: {len(ids)} held-out tasks, {before:.3f} -> {after:.3f}, {after - before:+.3f} {interval}"

    def generation_of(run_id: str) -> int:
        return args.generation or heldout.filter(run_id=run_id)["generation"].max()

    for run_id in sorted(heldout["run_id"].unique()):
        last = generation_of(run_id)
        print(compared(f"{run_id} g0 -> g{last}", solved(run_id, 0), solved(run_id, last)))
        if args.against and run_id != args.against:
            base = generation_of(args.against)
            label = f"{run_id} g{last} against {args.against} g{base}"
            print(compared(label, solved(args.against, base), solved(run_id, last)))


if __name__ == "__main__":
    main()
