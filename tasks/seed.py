"""Stage (generation 0): record the seed set and start D_train with its training split."""

from __future__ import annotations

import json
import time
from functools import cache

from curriculum.pools import is_heldout
from domains.decontamination import BenchmarkIndex
from tasks.context import GenerationRef, stage_result
from tasks.options import stage


@cache
def benchmark_index(benchmarks_dir: str) -> BenchmarkIndex:
    return BenchmarkIndex.from_dir(benchmarks_dir) if benchmarks_dir else BenchmarkIndex.empty()


@stage("seed-pool")
def seed_pool(ref: GenerationRef) -> dict:
    started = time.perf_counter()
    config, warehouse = ref.config, ref.warehouse
    if warehouse.has_rows("tasks", ref.run_id, ref.generation):
        return stage_result(ref, "seed", started, skipped=True)
    index = benchmark_index(config.benchmarks_dir)
    tasks, pool = [], []
    for seed in ref.domain.load_seeds():
        question = str(seed.spec.get("question", ""))
        overlap = index.contains(question)
        heldout = is_heldout(seed.task_id, config.heldout_fraction)
        tasks.append(
            {
                "run_id": ref.run_id,
                "generation": 0,
                "task_id": seed.task_id,
                "origin": "seed",
                "seed_task_id": None,
                "batch_id": None,
                "family": seed.family,
                "question": question,
                "spec_json": json.dumps(seed.spec, sort_keys=True),
                "answer": seed.answer,
                "raw_output": None,
                "simulator_context": None,
                "valid": not overlap,
                "reject_reason": "benchmark_overlap" if overlap else None,
                "heldout": heldout,
            }
        )
        if not heldout and not overlap:
            pool.append(
                {"run_id": ref.run_id, "generation": 0, "pool": "train", "task_id": seed.task_id, "weight": 1.0}
            )
    warehouse.append("tasks", tasks)
    warehouse.append("pool", pool)
    return stage_result(
        ref, "seed", started, seeds=len(tasks), train=len(pool), heldout=sum(t["heldout"] for t in tasks)
    )
