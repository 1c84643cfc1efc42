"""Stage 1, generate: the simulator writes n variations of each drawn seed; every output is kept.

Seeds are drawn from D_train (shipped seeds plus every earlier valid task). Each output is parsed and
validated by the domain (schema, the checker accepts its own answer, no duplicate, no benchmark
overlap); rejected outputs are stored with their reason.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable

import polars as pl

from genenv.curriculum.pools import abstention_tasks, abstentions_for_share, draw, generation_rng, replay_order
from genenv.domains.base import REPEAT, AbstainingDomain, Candidate, Domain, Messages, TaskInstance, ValidationContext
from genenv.domains.decontamination import domain_index
from genenv.faults import crash_point
from genenv.models.sampling import Completion
from genenv.pipeline.adapter_lineage import committed_checkpoints, reference_checkpoints
from genenv.pipeline.context import (
    GenerationRef,
    earlier_sampled_answers,
    heldout_seeds,
    last_success,
    load_tasks,
    pool_ids,
    progress_bar,
    simulator_sampling,
    subset,
    task_from_row,
    task_generation,
)
from genenv.pipeline.contract import StageOutput, generation_stage, tasks_written
from genenv.tasks.agent_groups import intended_calls

FAMILY_HINT_ROLLOUTS = 16
"""The agent's latest rollouts of a seed's family that make its difficulty hint (at least a quarter of them, or the
run-wide rate stands in)."""


def recent_success_rate(ref: GenerationRef) -> float | None:
    """The agent's latest success rate over everything: the previous generation's fresh tasks, or its held-out score
    right after the warm start."""
    metrics = json.loads(
        ref.warehouse.read("generations", run_id=ref.run_id, generation=ref.generation - 1)["metrics"][0]
    )
    fresh = metrics.get("fresh_success")
    return metrics.get("heldout_success") if fresh is None else fresh


def family_success_rates(answers: pl.DataFrame, known: dict[str, TaskInstance]) -> dict[str, float]:
    """family -> the agent's success over its latest FAMILY_HINT_ROLLOUTS sampled rollouts (fresh and pool tasks of
    earlier generations), for families with at least a quarter of that many: one run-wide rate swings with the mix of
    families drawn, and tells a seed nothing about how hard its own family is for the agent."""
    families = pl.DataFrame(
        {"task_id": list(known), "family": [t.family for t in known.values()]},
        schema={"task_id": pl.String, "family": pl.String},
    )
    latest = (
        answers.join(families, on="task_id")
        .sort("generation", "trajectory_id", descending=True)
        .group_by("family")
        .agg(pl.col("solved").head(FAMILY_HINT_ROLLOUTS).cast(pl.Float64))
    )
    return {
        family: sum(solved) / len(solved)
        for family, solved in latest.iter_rows()
        if len(solved) * 4 >= FAMILY_HINT_ROLLOUTS
    }


def draw_seeds(
    ref: GenerationRef, d_train: list[TaskInstance], answers: pl.DataFrame, by_family: dict[str, float]
) -> list[TaskInstance]:
    """The seeds the simulator varies this generation (simulator_seed_draw): a uniform draw of D_train, or "edge", the
    replay draw's order (`replay_order`), where a task the agent has outgrown weighs a quarter (`seed_success`)."""
    config = ref.config
    rng = generation_rng(config.seed, ref.generation, "seeds")
    if config.simulator_seed_draw == "uniform":
        return draw(d_train, config.seeds_per_generation, rng)
    by_id = {task.task_id: task for task in d_train}
    order = replay_order(list(by_id), seed_success(answers, d_train, by_family), rng)
    return [by_id[task_id] for task_id in order[: config.seeds_per_generation]]


def seed_success(answers: pl.DataFrame, d_train: list[TaskInstance], by_family: dict[str, float]) -> dict[str, float]:
    """task id -> the agent's latest success on it (`last_success`) or, never answered, on its family
    (`family_success_rates`); a task with neither is absent."""
    family = {task.task_id: by_family[task.family] for task in d_train if task.family in by_family}
    return family | last_success(answers, [task.task_id for task in d_train])


@generation_stage(done=tasks_written, reads=("generations", "trajectories", "pool"), writes=("tasks",), gpu=True)
def generate(ref: GenerationRef) -> StageOutput:
    config, warehouse, domain = ref.config, ref.warehouse, ref.domain
    if task_generation(ref) != ref.generation:
        return StageOutput(ref, {"reused_generation": task_generation(ref)})

    known = load_tasks(ref)
    pool = subset(known, pool_ids(ref, "train", ref.generation - 1))
    d_train = list(pool.values())
    answers = earlier_sampled_answers(ref)  # the agent's recent success, read once for the hint and the seed draw
    overall, by_family = recent_success_rate(ref), family_success_rates(answers, known)
    seed_tasks = draw_seeds(ref, d_train, answers, by_family)
    contexts = [
        domain.simulator_messages(task, by_family.get(task.family, overall), alpha=config.alpha, k_min=config.k_min)
        for task in seed_tasks
    ]
    conversations = [c for c in contexts for _ in range(config.variations_per_seed)]
    backend = ref.runtime.backend(config, committed_checkpoints(ref, ref.generation - 1), reference_checkpoints(ref))
    sampling = simulator_sampling(config, ref.generation)
    with progress_bar(f"g{ref.generation} generate", len(conversations)) as bar:
        completions = backend.generate("simulator", conversations, sampling, progress=bar.advance)

    crash_point(f"g{ref.generation}:generate:generated")
    context = ValidationContext(
        seen_keys={domain.dedup_key(t) for t in known.values()},
        is_contaminated=domain_index(domain, config.benchmarks_dir).contains,
        heldout_calls={domain.answer_key(t) for t in heldout_seeds(ref, known)},
    )
    rows = []
    written: set[str] = set()  # this generation's valid tasks: a repeat shares their verdict (tasks/rewards.py)
    for i, seed_task in enumerate(seed_tasks):
        batch_id = ref.key(f"b{i}")
        for j in range(config.variations_per_seed):
            completion = completions[i * config.variations_per_seed + j]
            candidate = domain.parse_candidate(
                completion.text, seed_task, task_id=f"{batch_id}/v{j}", truncated=not completion.finished
            )
            candidate = repeat_of_this_generation(domain, domain.validate(candidate, context), written)
            rows.append(_simulator_row(ref, seed_task, (batch_id, j), candidate, completion, contexts[i]))
    valid = [task_from_row(r) for r in rows if r["valid"]]
    fresh_calls = len(valid) - sum(map(domain.is_abstention, valid)) if isinstance(domain, AbstainingDomain) else 0
    built = abstentions_for(ref, domain, d_train, fresh_calls)
    abstentions = [_abstention_row(ref, task, offered) for task, offered in built]
    warehouse.append("tasks", rows + abstentions)
    return StageOutput(ref, {"outputs": len(rows), "valid": len(valid), "abstention_tasks": len(abstentions)})


def repeat_of_this_generation(domain: Domain, candidate: Candidate, written: set[str]) -> Candidate:
    """A valid output identical to one written earlier in this generation is kept out of the pools as a "repeat", and
    shares that output's verdict in the simulator's reward: only earlier generations' tasks make a "duplicate", so two
    identical outputs of one group never get opposite rewards for the same tokens."""
    if not candidate.valid or candidate.task is None:  # valid: parsed, so it has a task
        return candidate
    key = domain.dedup_key(candidate.task)
    if key in written:
        return dataclasses.replace(candidate, reject_reason=REPEAT)
    written.add(key)
    return candidate


def abstentions_for(
    ref: GenerationRef, domain: Domain, pool: list[TaskInstance], fresh_calls: int
) -> list[tuple[TaskInstance, str]]:
    """This generation's abstention tasks, each with the id of the task whose means it offers, the domain's kinds in
    equal shares: enough for the abstention share of a full batch (`intended_calls` with `fresh_calls` call
    groups) in every round dynamic sampling may draw; none for a domain without abstention."""
    config = ref.config
    if not isinstance(domain, AbstainingDomain) or config.abstention_share == 0:
        return []
    count = abstentions_for_share(config.abstention_share, intended_calls(config, fresh_calls))
    count = max(count, 1) * (config.dynamic_sampling_draws if config.dynamic_sampling else 1)
    kinds = domain.abstention_builders(pool)

    def builder(kind: str) -> Callable[[random.Random, int], tuple[TaskInstance, str] | None]:
        return lambda rng, index: kinds[kind](rng, ref.key("abstention", kind, index))

    rng = generation_rng(config.seed, ref.generation, "abstention")
    return abstention_tasks(count, rng, [builder(kind) for kind in kinds], lambda built: domain.dedup_key(built[0]))


def _simulator_row(
    ref: GenerationRef,
    seed_task: TaskInstance,
    variation: tuple[str, int],
    candidate: Candidate,
    completion: Completion,
    context: Messages,
) -> dict:
    """One simulator output's `tasks` row, valid or rejected, with the prompt and tokens that wrote it; `variation`:
    its seed batch and its index there."""
    batch_id, j = variation
    task_ = candidate.task
    return {
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
        "simulator_context": json.dumps(context),
        "simulator_prompt_ids": completion.prompt_ids,
        "simulator_completion_ids": completion.completion_ids,
        "valid": candidate.valid,
        "reject_reason": candidate.reject_reason,
        "heldout": False,
    }


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
