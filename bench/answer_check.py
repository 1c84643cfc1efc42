"""Label accuracy of generated tool-call tasks before and after the answer check (grounding, intent, enums).

The sample is every simulator task that today's validation would have called valid in a run of the code before
the answer check (`bench/data/labelled_simulator_tasks.jsonl`), each labelled by reading it: does the answer do
what the request asks? "Before" is the share of correct answers among all of them; "after" is the share among the
ones the domain's validation still accepts. `bench/data/labelled_c45_tasks.jsonl` holds 56 valid simulator tasks of
the issue-45 comparison (GenEnv-Random, seeds 0 and 2, generations 1 to 4), labelled the same way after validation;
`bench/data/labelled_c45_g5_g8_tasks.jsonl` 50 drawn at random (seed 0) from the 67 its seeds 1 and 3 wrote in
generations 5 to 8 (s1 g5-g8, s3 g5-g7, all there were when drawn) that the check with `value_reused` keeps: a
sample no rule of the check was written from when drawn (value_unused and function_unrelated were written from it
later). `bench/data/labelled_l56b_g1_g5_tasks.jsonl` is the fresh sample no rule was written from: 50 of the 59 valid
simulator tasks of generations 1-5 of the laptop run l56b (configs/laptop.yaml forked from l56's generation 0 with
simulator_min_records=8, written under the checks of before value_unused and function_unrelated), drawn by
`python bench/label_sample.py --warehouse data/l56/warehouse --run l56b-20261206-004959-058f --generations 1-5
--count 50 --out bench/data/labelled_l56b_g1_g5_tasks.jsonl` and labelled by hand (unit_mismatch and
enum_named_unused were written later from its wrong labels). `bench/data/labelled_l60q_g1_g2_tasks.jsonl` is a
census no rule had seen: all 92 valid simulator tasks of generations 1-2 of run l60q (configs/laptop.yaml forked from
l60's generation 0 with seeds_per_generation=24 and agent_call_groups=19, validated by the checks of commit 337aaf4),
drawn by `python bench/label_sample.py --warehouse data/l60/warehouse --run l60q-20261206-045130-9ac4 --generations 1-2
--count 200 --out bench/data/labelled_l60q_g1_g2_tasks.jsonl` and labelled by hand (value_reused's numbers were
written later from one of its wrong labels). `bench/data/labelled_l62_g1_g2_tasks.jsonl` is the census no rule was
written from: all 81 valid simulator tasks of generations 1-2 of run l62 (configs/laptop.yaml, loop seed 0,
validated by the checks of commit 3612bdd), drawn by `python bench/label_sample.py --warehouse data/l62/warehouse
--run l62-20261206-120328-50da --generations 1-2 --count 200 --out bench/data/labelled_l62_g1_g2_tasks.jsonl` and
labelled by hand before any rule changed; `bench/data/labelled_l62_g3_g4_tasks.jsonl` the same for its generations 3-4
(104 tasks, `--generations 3-4`). Each run also prints the share
of the shipped seeds and of a catalog draw (10 requests a function, seeded) that the check rejects: right answers by
construction, so every rejection there is a false one.

With `--warehouse`, each sample is split by the pools its tasks joined in that run, as its `pool` table recorded them:
D_train (with `d_train_needs_agreement`, only tasks an answer of the agent matched) and D_env (the α band), and the
right share of what joined D_train and still passes today's check.
Usage: `python bench/answer_check.py [--sample FILE ...] [--warehouse DIR]` (each sample in turn, then the false
rejects once).
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

from genenv.domains.base import Candidate, TaskInstance, ValidationContext, get_domain
from genenv.domains.tool_call.calls import Call, format_calls
from genenv.domains.tool_call.catalog import CATALOG
from genenv.domains.tool_call.domain import family_of
from genenv.warehouse.store import Warehouse

SAMPLE = Path(__file__).parent / "data" / "labelled_simulator_tasks.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sample", type=Path, nargs="+", default=[SAMPLE], help="labelled tasks, one JSON object a line"
    )
    parser.add_argument("--warehouse", help="the sampled run's warehouse: split each sample by the pools it joined")
    args = parser.parse_args()
    domain = get_domain("tool_call")
    members = pool_members(Warehouse(args.warehouse)) if args.warehouse else None
    for sample in args.sample:
        print(f"== {sample.name}")
        rows = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()]
        kept = checked(domain, rows)
        if members is not None:
            by_pool(rows, kept, members)
    false_rejects(domain)


def pool_members(warehouse: Warehouse) -> dict[str, set[str]]:
    """pool name ("train", "env") -> the task ids that joined it, in any run of the warehouse."""
    pool = warehouse.read("pool")
    return {name: set(pool.filter(pool=name)["task_id"]) for name in ("train", "env")}


def by_pool(rows: list[dict], kept: list[dict], members: dict[str, set[str]]) -> None:
    """The right share of the sample's tasks that joined each pool, that stayed out of D_train, and that joined
    D_train and pass today's check."""
    kept_ids = {row.get("task_id") for row in kept}
    groups = {
        "joined D_train": [r for r in rows if r.get("task_id") in members["train"]],
        "kept out of D_train": [r for r in rows if r.get("task_id") not in members["train"]],
        "joined D_env": [r for r in rows if r.get("task_id") in members["env"]],
        "joined D_train, passes the check": [
            r for r in rows if r.get("task_id") in members["train"] and r.get("task_id") in kept_ids
        ],
    }
    for name, group in groups.items():
        right = sum(r["correct"] for r in group)
        print(f"  {name}: {len(group)}, correct {right} ({right / max(len(group), 1):.1%})")


def checked(domain, rows: list[dict]) -> list[dict]:
    """The sample's right share before and after the check, and each rejection's reason by its label; the rows the
    check keeps."""
    kept, reasons = [], Counter()
    for i, row in enumerate(rows):
        task = TaskInstance(
            task_id=f"sample-{i}",
            spec={"functions": row["functions"], "question": row["question"]},
            answer=row["answer"],
            family=family_of(row["functions"]),
        )
        verdict = domain.validate(Candidate(raw="", task=task), ValidationContext())
        if verdict.valid:
            kept.append(row)
        else:
            reasons[(verdict.reject_reason, "correct" if row["correct"] else "wrong")] += 1
    correct = sum(r["correct"] for r in rows)
    kept_correct = sum(r["correct"] for r in kept)
    print(f"labelled valid tasks: {len(rows)}, correct {correct} ({correct / len(rows):.0%})")
    print(f"after the answer check: {len(kept)} kept, correct {kept_correct} ({kept_correct / max(len(kept), 1):.0%})")
    print(
        f"correct tasks kept: {kept_correct} of {correct}; wrong tasks rejected: "
        f"{len(rows) - correct - (len(kept) - kept_correct)} of {len(rows) - correct}"
    )
    for (reason, label), count in sorted(reasons.items()):
        print(f"  rejected {reason:<22} {label:<8} {count}")
    return kept


def false_rejects(domain) -> None:
    """Rejections of right answers: the shipped seeds, and 10 requests the catalog writes for each function."""
    seeds = domain.load_seeds()
    rng = random.Random(7)
    drawn = []
    for name, entry in sorted(CATALOG.items()):
        for index in range(10):
            question, arguments = entry.make(rng)
            spec = {"functions": [entry.schema], "question": question}
            drawn.append(TaskInstance(f"{name}/{index}", spec, format_calls([Call(name, arguments)]), ""))
    for label, tasks in (("shipped seeds", seeds), ("catalog draw", drawn)):
        verdicts = [domain.validate(Candidate(raw="", task=t), ValidationContext()).reject_reason for t in tasks]
        rejected = Counter(reason for reason in verdicts if reason is not None)
        count = sum(rejected.values())
        print(f"{label}: {len(tasks)}, rejected {count} ({count / len(tasks):.1%}) {dict(sorted(rejected.items()))}")


if __name__ == "__main__":
    main()
