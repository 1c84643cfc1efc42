"""Draw a sample of a run's valid simulator tasks for hand labelling (bench/answer_check.py reads the labelled file).

Each line holds the task's spec as the agent sees it (tool_call: functions, question) and its answer, with `correct`
left null and `note` empty: the labeller reads each one and sets `correct` (does the answer do what the request asks?)
and, for a wrong one, the reason in `note`. Drawn from committed generations only, seeded, so the draw can be repeated.

    python bench/label_sample.py --warehouse data/l56/warehouse --run RUN --generations 5-8 --count 50 \
        --out bench/data/labelled_l56_g5_g8_tasks.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import polars as pl

from genenv.warehouse.store import Warehouse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True, help="the warehouse folder or URI")
    parser.add_argument("--run", required=True, help="run id")
    parser.add_argument("--generations", default="5-8", help="first-last, both included")
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    first, _, last = args.generations.partition("-")
    warehouse = Warehouse(args.warehouse)
    committed = set(warehouse.committed(args.run)["generation"])
    wanted = [g for g in range(int(first), int(last or first) + 1) if g in committed]
    tasks = warehouse.read("tasks", run_id=args.run).filter(
        pl.col("generation").is_in(wanted), origin="simulator", valid=True
    )
    rows = sorted(tasks.iter_rows(named=True), key=lambda row: row["task_id"])
    drawn = random.Random(args.seed).sample(rows, min(args.count, len(rows)))
    with args.out.open("w", encoding="utf-8") as out:
        for row in sorted(drawn, key=lambda row: row["task_id"]):
            line = {**json.loads(row["spec_json"]), "answer": row["answer"], "correct": None, "note": ""}
            line["task_id"] = row["task_id"]
            out.write(json.dumps(line, sort_keys=True) + "\n")
    print(f"{len(drawn)} of the {len(rows)} valid simulator tasks of generations {wanted} -> {args.out}")


if __name__ == "__main__":
    main()
