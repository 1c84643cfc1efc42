"""Stage 2, rollout: the agent answers each fresh valid task k times (its GRPO group), plus a sample of the pool
D_train and the generation's abstention tasks. These rollouts are generated once and feed both p̂ and the GRPO update;
with dynamic sampling, pool and abstention tasks are drawn several times over and finetune keeps the groups whose
rewards differ."""

from __future__ import annotations

import polars as pl

from genenv.curriculum.pools import draw, generation_rng, sampling_seed
from genenv.models.sampling import SamplingSettings
from genenv.tasks.adapter_lineage import committed_checkpoints, reference_checkpoints
from genenv.tasks.answers import answer_tasks
from genenv.tasks.context import (
    fresh_tasks,
    greedy_sampling,
    load_tasks,
    pool_ids,
    probe_set,
    subset,
)
from genenv.tasks.contract import Rollouts, TaskSet, generation_stage
from genenv.tasks.staging import read_staged, staging_path, write_staged


def rollouts_staged(tasks: TaskSet) -> Rollouts | None:
    uri = staging_path(tasks.ref, "rollouts")
    return Rollouts(tasks.ref, uri=uri) if read_staged(uri) is not None else None


@generation_stage(done=rollouts_staged, gpu=True)
def rollout(tasks: TaskSet) -> Rollouts:
    ref = tasks.ref
    config = ref.config
    known = load_tasks(ref)
    fresh = fresh_tasks(ref, known)
    pool = subset(known, pool_ids(ref, "train", ref.generation - 1))
    draws = config.dynamic_sampling_draws if config.dynamic_sampling else 1
    rng = generation_rng(config.seed, ref.generation, "pool")
    sampled = draw(list(pool.values()), draws * config.pool_tasks_per_generation, rng)
    abstentions = fresh_tasks(ref, known, origin="abstention")
    work = [(t, "fresh") for t in fresh.values()] + [(t, "pool") for t in sampled]
    work += [(t, "abstention") for t in abstentions.values()]
    sampling = SamplingSettings(
        max_new_tokens=config.agent_max_new_tokens,
        temperature=config.agent_temperature,
        top_p=config.agent_top_p,
        seed=sampling_seed(config.seed, ref.generation, "agent"),
    )
    backend = ref.runtime.backend(config, committed_checkpoints(ref, ref.generation - 1), reference_checkpoints(ref))
    rollouts = answer_tasks(ref, backend, work, config.rollouts_per_task, sampling, "rollout")
    probes = [(t, "probe_before") for t in probe_set(ref, fresh)]
    before = answer_tasks(ref, backend, probes, 1, greedy_sampling(config), "probe before update")
    uri = write_staged(ref, "rollouts", pl.concat([rollouts, before]))
    counts = {"fresh_tasks": len(fresh), "pool_tasks": len(sampled), "abstention_tasks": len(abstentions)}
    return Rollouts(ref, {**counts, "rollouts": rollouts.height}, uri=uri)
