"""Stage 1, generate: the simulator writes n variations of each drawn seed; every output is kept.

Seeds are drawn from D_train (shipped seeds plus every earlier valid task). Each output is parsed and
validated by the domain (schema, the checker accepts its own answer, no duplicate, no benchmark
overlap); rejected outputs are stored with their reason.
"""

from __future__ import annotations

import json

from genenv.curriculum.pools import abstention_tasks, draw, generation_rng, intended_abstentions, sampling_seed
from genenv.domains.base import AbstainingDomain, Domain, TaskInstance, ValidationContext
from genenv.domains.decontamination import domain_index
from genenv.faults import crash_point
from genenv.models.sampling import SamplingSettings
from genenv.tasks.adapter_lineage import committed_checkpoints, reference_checkpoints
from genenv.tasks.context import (
    GenerationRef,
    heldout_seeds,
    load_tasks,
    pool_ids,
    progress_bar,
    subset,
    task_generation,
)
from genenv.tasks.contract import TaskSet, generation_stage, tasks_written


def recent_success_rate(ref: GenerationRef) -> float | None:
    """The agent's latest success rate, shown to the simulator: the previous generation's fresh tasks,
    or its held-out score right after the warm start."""
    metrics = json.loads(
        ref.warehouse.read("generations", run_id=ref.run_id, generation=ref.generation - 1)["metrics"][0]
    )
    fresh = metrics.get("fresh_success")
    return metrics.get("heldout_success") if fresh is None else fresh


@generation_stage(done=tasks_written, writes=("tasks",), gpu=True)
def generate(ref: GenerationRef) -> TaskSet:
    config, warehouse, domain = ref.config, ref.warehouse, ref.domain
    if task_generation(ref) != ref.generation:
        return TaskSet(ref, {"reused_generation": task_generation(ref)})

    known = load_tasks(ref)
    pool = subset(known, pool_ids(ref, "train", ref.generation - 1))
    d_train = list(pool.values())
    seed_tasks = draw(d_train, config.seeds_per_generation, generation_rng(config.seed, ref.generation, "seeds"))
    success = recent_success_rate(ref)
    contexts = [domain.simulator_messages(task, success, alpha=config.alpha, k_min=config.k_min) for task in seed_tasks]
    conversations = [c for c in contexts for _ in range(config.variations_per_seed)]
    backend = ref.runtime.backend(config, committed_checkpoints(ref, ref.generation - 1), reference_checkpoints(ref))
    sampling = SamplingSettings(
        max_new_tokens=config.simulator_max_new_tokens,
        temperature=config.simulator_temperature,
        top_p=config.simulator_top_p,
        seed=sampling_seed(config.seed, ref.generation, "simulator"),
    )
    with progress_bar(f"g{ref.generation} generate", len(conversations)) as bar:
        completions = backend.generate("simulator", conversations, sampling, progress=bar.update)

    crash_point(f"g{ref.generation}:generate:generated")
    seen = {domain.dedup_key(t) for t in known.values()}
    context = ValidationContext(
        seen_keys=seen,
        is_contaminated=domain_index(domain, config.benchmarks_dir).contains,
        heldout_calls={domain.answer_key(t) for t in heldout_seeds(ref, known)},
    )
    rows = []
    for i, seed_task in enumerate(seed_tasks):
        batch_id = ref.key(f"b{i}")
        for j in range(config.variations_per_seed):
            completion = completions[i * config.variations_per_seed + j]
            candidate = domain.parse_candidate(
                completion.text, seed_task, task_id=f"{batch_id}/v{j}", truncated=not completion.finished
            )
            candidate = domain.validate(candidate, context)
            if candidate.valid:
                context.seen_keys.add(domain.dedup_key(candidate.task))
            task_ = candidate.task
            rows.append(
                {
                    "run_id": ref.run_id,
                    "generation": ref.generation,
                    "task_id": f"{batch_id}/v{j}",
                    "origin": "simulator",
                    "seed_task_id": seed_task.task_id,
                    "batch_id": batch_id,
                    "family": seed_task.family,
                    "question": None if task_ is None else task_.question,
                    "spec_json": None if task_ is None else json.dumps(task_.spec, sort_keys=True),
                    "answer": None if task_ is None else task_.answer,
                    "raw_output": candidate.raw,
                    "simulator_context": json.dumps(contexts[i]),
                    "simulator_prompt_ids": completion.prompt_ids,
                    "simulator_completion_ids": completion.completion_ids,
                    "valid": candidate.valid,
                    "reject_reason": candidate.reject_reason,
                    "heldout": False,
                }
            )
    valid = sum(r["valid"] for r in rows)
    abstentions = [_abstention_row(ref, t, offered) for t, offered in abstentions_for(ref, domain, d_train, valid)]
    warehouse.append("tasks", rows + abstentions)
    return TaskSet(ref, {"outputs": len(rows), "valid": valid, "abstention_tasks": len(abstentions)})


def abstentions_for(
    ref: GenerationRef, domain: Domain, pool: list[TaskInstance], fresh_valid: int
) -> list[tuple[TaskInstance, str]]:
    """This generation's abstention tasks, with the id of the task whose means each offers: `abstention_share` of the
    agent's groups (fresh tasks, pool draws and these), times `dynamic_sampling_draws` when dynamic sampling draws
    extra; none for a domain without abstention."""
    config = ref.config
    if not isinstance(domain, AbstainingDomain) or config.abstention_share == 0:
        return []
    count = intended_abstentions(config.abstention_share, fresh_valid + config.pool_tasks_per_generation)
    count *= config.dynamic_sampling_draws if config.dynamic_sampling else 1
    offered_by: dict[str, str] = {}

    def make(offered: TaskInstance, request: TaskInstance, index: int) -> TaskInstance | None:
        task = domain.abstention_task(offered, request, ref.key("abstention", index))
        if task is not None:
            offered_by[task.task_id] = offered.task_id
        return task

    rng = generation_rng(config.seed, ref.generation, "abstention")
    built = abstention_tasks(pool, count, rng, make, domain.dedup_key)
    return [(task, offered_by[task.task_id]) for task in built]


def _abstention_row(ref: GenerationRef, task: TaskInstance, offered_id: str) -> dict:
    return {
        "run_id": ref.run_id,
        "generation": ref.generation,
        "task_id": task.task_id,
        "origin": "abstention",
        "seed_task_id": offered_id,
        "batch_id": None,
        "family": task.family,
        "question": task.question,
        "spec_json": json.dumps(task.spec, sort_keys=True),
        "answer": task.answer,
        "raw_output": None,
        "simulator_context": None,
        "simulator_prompt_ids": None,
        "simulator_completion_ids": None,
        "valid": True,
        "reject_reason": None,
        "heldout": False,
    }
