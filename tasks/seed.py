"""Stage (generation 0): record the seed set and start D_train with its training split.

Whole task families are held out. Every seed is validated like a generated task, so a training seed that
overlaps the evaluation benchmarks or gives the same answer as a held-out seed stays out of D_train."""

from __future__ import annotations

import dataclasses
import json
import logging

from prefect import get_run_logger
from prefect.exceptions import MissingContextError

from genenv.curriculum.pools import is_heldout
from genenv.domains.base import Candidate, Domain, ValidationContext
from genenv.domains.decontamination import domain_index
from genenv.pipeline.context import GenerationRef
from genenv.pipeline.contract import StageOutput, generation_stage, tasks_written


def _logger() -> logging.Logger | logging.LoggerAdapter:
    """The run's logger inside a flow (so the UI shows the line), the module's when the stage is called bare."""
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger(__name__)


def log_decontamination(domain: Domain, benchmarks_dir: str) -> None:
    """One line: the evaluation sets the domain's tasks are checked against, and those it would read but cannot."""
    sets = domain.benchmark_sets(benchmarks_dir)
    checked = [name for name, missing in sets.items() if missing is None]
    line = f"decontaminating against: {', '.join(checked) or 'nothing'}"
    _logger().info(line + "".join(f"; not checked, {missing}" for missing in sets.values() if missing is not None))


@generation_stage(done=tasks_written, writes=("tasks", "pool"))
def seed_pool(ref: GenerationRef) -> StageOutput:
    config, warehouse = ref.config, ref.warehouse
    domain = ref.domain
    log_decontamination(domain, config.benchmarks_dir)
    seeds = domain.load_seeds()
    heldout_ids = {s.task_id for s in seeds if is_heldout(s.family, config.heldout_fraction)}
    benchmarks = ValidationContext(is_contaminated=domain_index(domain, config.benchmarks_dir).contains)
    # A training seed must not teach a held-out answer: it is checked like a generated task.
    training = dataclasses.replace(
        benchmarks, heldout_calls={domain.answer_key(s) for s in seeds if s.task_id in heldout_ids}
    )
    tasks, pool = [], []
    for seed in seeds:
        heldout = seed.task_id in heldout_ids
        checked = domain.validate(Candidate(raw="", task=seed), benchmarks if heldout else training)
        tasks.append(
            {
                "run_id": ref.run_id,
                "generation": 0,
                "task_id": seed.task_id,
                "origin": "seed",
                "seed_task_id": None,
                "batch_id": None,
                "family": seed.family,
                "question": seed.question,
                "spec_json": json.dumps(seed.spec, sort_keys=True),
                "answer": seed.answer,
                "raw_output": None,
                "simulator_context": None,
                "simulator_prompt_ids": None,
                "simulator_completion_ids": None,
                "valid": checked.valid,
                "reject_reason": checked.reject_reason,
                "heldout": heldout,
            }
        )
        if not heldout and checked.valid:
            pool.append(
                {"run_id": ref.run_id, "generation": 0, "pool": "train", "task_id": seed.task_id, "weight": 1.0}
            )
    warehouse.append("tasks", tasks)
    warehouse.append("pool", pool)
    return StageOutput(ref, {"seeds": len(tasks), "train": len(pool), "heldout": sum(t["heldout"] for t in tasks)})
