"""Stage 2, rollout: the agent answers each fresh valid task k times (its GRPO group), plus a sample of
the pool D_train. These rollouts are generated once and feed both p̂ and the GRPO update."""

from __future__ import annotations

import time

import polars as pl

from genenv.curriculum.pools import draw, generation_rng
from genenv.domains.base import TaskInstance
from genenv.models.generation import GenerationBackend, SamplingSettings
from genenv.tasks.context import (
    GenerationRef,
    fresh_tasks,
    greedy_sampling,
    load_tasks,
    pool_ids,
    probe_set,
    progress_bar,
    stage_result,
    subset,
)
from genenv.tasks.options import stage
from genenv.tasks.runtime import RUNTIME, committed_checkpoints, reference_checkpoints
from genenv.tasks.staging import read_staged, write_staged


def answer_tasks(
    ref: GenerationRef,
    backend: GenerationBackend,
    tasks: list[tuple[TaskInstance, str]],
    samples: int,
    sampling: SamplingSettings,
    label: str,
) -> pl.DataFrame:
    """`samples` agent answers to each (task, purpose), as rows of raw completions."""
    domain = ref.domain
    conversations = [domain.agent_messages(t) for t, _ in tasks for _ in range(samples)]
    with progress_bar(f"g{ref.generation} {label}", len(conversations)) as bar:
        completions = backend.generate("agent", conversations, sampling, progress=bar.update)
    rows = [
        {
            "task_id": t.task_id,
            "purpose": purpose,
            "sample_index": k,
            "completion": completions[i * samples + k].text,
            "finished": completions[i * samples + k].finished,
            "prompt_ids": completions[i * samples + k].prompt_ids,
            "completion_ids": completions[i * samples + k].completion_ids,
        }
        for i, (t, purpose) in enumerate(tasks)
        for k in range(samples)
    ]
    return pl.DataFrame(
        rows,
        schema={
            "task_id": pl.String,
            "purpose": pl.String,
            "sample_index": pl.Int64,
            "completion": pl.String,
            "finished": pl.Boolean,
            "prompt_ids": pl.List(pl.Int64),
            "completion_ids": pl.List(pl.Int64),
        },
    )


@stage("rollout", gpu=True)
def rollout(ref: GenerationRef) -> dict:
    started = time.perf_counter()
    config = ref.config
    if read_staged(ref, "rollouts") is not None:
        return stage_result(ref, "rollout", started, skipped=True)
    known = load_tasks(ref)
    fresh = fresh_tasks(ref, known)
    pool = subset(known, pool_ids(ref, "train", ref.generation - 1))
    sampled = draw(
        list(pool.values()), config.pool_tasks_per_generation, generation_rng(config.seed, ref.generation, "pool")
    )
    work = [(t, "fresh") for t in fresh.values()] + [(t, "pool") for t in sampled]
    sampling = SamplingSettings(
        max_new_tokens=config.agent_max_new_tokens,
        temperature=config.agent_temperature,
        top_p=config.agent_top_p,
        seed=config.seed * 100_003 + ref.generation + 7,
    )
    backend = RUNTIME.backend(config, committed_checkpoints(ref, ref.generation - 1), reference_checkpoints(ref))
    rollouts = answer_tasks(ref, backend, work, config.rollouts_per_task, sampling, "rollout")
    probes = [(t, "probe_before") for t in probe_set(ref, fresh)]
    before = answer_tasks(ref, backend, probes, 1, greedy_sampling(config), "probe before update")
    write_staged(ref, "rollouts", pl.concat([rollouts, before]))
    return stage_result(
        ref, "rollout", started, fresh_tasks=len(fresh), pool_tasks=len(sampled), rollouts=rollouts.height
    )
