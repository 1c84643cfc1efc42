"""Stage 2, rollout: the agent answers each fresh valid task (p_hat_rollouts times: its p̂; the first
rollouts_per_task are its GRPO group), plus draws of the pool D_train and of the generation's abstention tasks. These
rollouts are generated once and feed both p̂ and the GRPO update. With dynamic sampling (DAPO), pool and abstention
tasks are drawn again, round after round, until the groups whose rewards differ fill the intended batch. A fresh task
whose first p̂ lies near α gets p_hat_confirm_rollouts more answers, so the α band is decided on the finer estimate.
With simulator_pool_rescore, D_env's records of earlier generations are answered again the same way: their p̂ now."""

from __future__ import annotations

import math

import polars as pl

from genenv.config import GenEnvConfig
from genenv.curriculum.generator_rewards import near_band
from genenv.curriculum.pools import (
    Group,
    abstentions_for_share,
    draw,
    generation_rng,
    replay_order,
    still_missing,
)
from genenv.domains.base import TaskInstance
from genenv.pipeline.adapter_lineage import committed_checkpoints, reference_checkpoints
from genenv.pipeline.context import (
    GenerationRef,
    agent_sampling,
    earlier_sampled_answers,
    fresh_tasks,
    greedy_sampling,
    last_success,
    load_tasks,
    pool_ids,
    probe_set,
    subset,
)
from genenv.pipeline.contract import Rollouts, StageOutput, generation_stage
from genenv.pipeline.staging import read_staged, staging_path, write_staged
from genenv.tasks.agent_groups import call_target, groups_of
from genenv.tasks.answers import ANSWER_SCHEMA, answer_tasks
from genenv.warehouse.purposes import Purpose

SPREAD_GUESS = 0.5
"""A round draws the batch's shortfall over this: about half of the groups drawn show a reward spread."""


def rollouts_staged(generated: StageOutput) -> Rollouts | None:
    """The staged rollouts, when they carry their verdicts (answers staged by a genenv that judged them in verify
    are answered again)."""
    uri = staging_path(generated.ref, "rollouts")
    staged = read_staged(uri)
    return Rollouts(generated.ref, uri=uri) if staged is not None and "reward" in staged.columns else None


@generation_stage(done=rollouts_staged, reads=("tasks", "pool", "generations", "trajectories"), gpu=True)
def rollout(generated: StageOutput) -> Rollouts:
    ref = generated.ref
    config = ref.config
    known = load_tasks(ref)
    fresh = fresh_tasks(ref, known)
    pool = subset(known, pool_ids(ref, "train", ref.generation - 1))
    order = replay_order(
        list(pool),
        last_success(earlier_sampled_answers(ref), list(pool)),
        generation_rng(config.seed, ref.generation, "pool"),
    )
    pool_order = [pool[task_id] for task_id in order]
    abstention_order = sorted(fresh_tasks(ref, known, origin="abstention").values(), key=_built_index)
    target, share = call_target(ref, fresh), config.abstention_share
    backend = ref.runtime.backend(config, committed_checkpoints(ref, ref.generation - 1), reference_checkpoints(ref))
    samples = {Purpose.FRESH: _first_answers(config)}
    samples |= {Purpose.POOL: config.rollouts_per_task, Purpose.ABSTENTION: config.rollouts_per_task}

    queues = {Purpose.POOL: pool_order, Purpose.ABSTENTION: abstention_order}  # each purpose's draws, in order
    drawn = {Purpose.POOL: config.pool_tasks_per_generation, Purpose.ABSTENTION: abstentions_for_share(share, target)}
    work = [(t, Purpose.FRESH) for t in fresh.values()] + _next(queues, dict.fromkeys(queues, 0), drawn)
    answered: list[pl.DataFrame] = []
    groups: dict[str, Group] = {}
    rounds = config.dynamic_sampling_draws if config.dynamic_sampling else 1
    for round_ in range(rounds):
        answers = answer_tasks(ref, backend, work, samples, agent_sampling(config, ref.generation, round_), "rollout")
        answered.append(answers)
        groups |= groups_of(ref, answers, known)
        missing = still_missing(groups, target, share, config.dynamic_sampling)
        wanted = {purpose: math.ceil(count / SPREAD_GUESS) for purpose, count in zip(queues, missing, strict=True)}
        work = _next(queues, drawn, wanted)
        if not work or round_ + 1 == rounds:
            break
        drawn = {purpose: drawn[purpose] + wanted[purpose] for purpose in queues}
    answered.append(confirming(ref, backend, groups, known))
    rescored = rescoring(ref, backend, known)
    rollouts = pl.concat([*answered, rescored])
    probes = [(t, Purpose.PROBE_BEFORE) for t in probe_set(ref, fresh)]
    before = answer_tasks(ref, backend, probes, 1, greedy_sampling(config), "probe before update")
    uri = write_staged(ref, "rollouts", pl.concat([rollouts, before]))
    counts = {f"{purpose}_tasks": min(drawn[purpose], len(queue)) for purpose, queue in queues.items()}
    counts |= {"fresh_tasks": len(fresh), "rescored_tasks": rescored["task_id"].n_unique()}
    return Rollouts(ref, {**counts, "rollouts": rollouts.height, "rounds": len(answered)}, uri=uri)


CONFIRM_ROUND = 1_000
"""The confirming answers sample with the seed of this round number, apart from every dynamic-sampling round's."""


def confirming(ref: GenerationRef, backend, groups: dict[str, Group], known: dict[str, TaskInstance]) -> pl.DataFrame:
    """More answers to each fresh task whose p̂ over its first answers (its group's `success`) lies near α, outside
    its GRPO group: the rewards stage reads p̂ over all of them."""
    return _near_alpha_again(ref, backend, groups, Purpose.FRESH, known, CONFIRM_ROUND)


RESCORE_ROUND = 2_000
"""D_env's records are answered again with the seed of this round number (and their confirmation with the next)."""


def rescore_candidates(ref: GenerationRef) -> list[str]:
    """The D_env records of earlier generations this generation answers again (simulator_pool_rescore): at most
    simulator_max_records of them, a seeded draw, sorted."""
    config = ref.config
    if not (config.simulator_pool_rescore and config.simulator_training):
        return []
    earlier = pool_ids(ref, "env", ref.generation - 1)
    rng = generation_rng(config.seed, ref.generation, "d-env-rescore")
    return sorted(draw(earlier, config.simulator_max_records, rng))


def rescoring(ref: GenerationRef, backend, known: dict[str, TaskInstance]) -> pl.DataFrame:
    """Each of `rescore_candidates` answered as a fresh task is (p_hat_rollouts answers, then more near α), so a
    record stays in the band by the test it joined by. The rewards stage reads each one's p̂ from them."""
    config = ref.config
    work = [(known[task_id], Purpose.RESCORE) for task_id in rescore_candidates(ref)]
    if not work:
        return pl.DataFrame(schema=ANSWER_SCHEMA)
    sampling = agent_sampling(config, ref.generation, RESCORE_ROUND)
    first = answer_tasks(ref, backend, work, _first_answers(config), sampling, "re-read D_env")
    groups = groups_of(ref, first, known)
    more = _near_alpha_again(ref, backend, groups, Purpose.RESCORE, known, RESCORE_ROUND + 1)
    return pl.concat([first, more])


def _first_answers(config: GenEnvConfig) -> int:
    """How many answers a fresh (or re-read) task gets before its p̂ is confirmed."""
    return max(config.rollouts_per_task, config.p_hat_rollouts)


def _near_alpha_again(
    ref: GenerationRef,
    backend,
    groups: dict[str, Group],
    purpose: Purpose,
    known: dict[str, TaskInstance],
    round_: int,
) -> pl.DataFrame:
    """p_hat_confirm_rollouts more answers to each `purpose` task whose p̂ over its first answers (its group's
    `success`) lies within p_hat_confirm_margin of α, numbered after them, sampled with the seed of `round_`."""
    config = ref.config
    near = [
        (known[task_id], purpose)
        for task_id, group in sorted(groups.items())
        if group.purpose == purpose
        and group.success is not None
        and near_band(group.success, config.alpha, config.p_hat_confirm_margin)
    ]
    if not config.p_hat_confirm_rollouts or not near:
        return pl.DataFrame(schema=ANSWER_SCHEMA)
    sampling = agent_sampling(config, ref.generation, round_)
    more = answer_tasks(ref, backend, near, config.p_hat_confirm_rollouts, sampling, f"confirm p̂ ({purpose})")
    return more.with_columns(pl.col("sample_index") + _first_answers(config))


def _next(
    queues: dict[Purpose, list[TaskInstance]], start: dict[Purpose, int], count: dict[Purpose, int]
) -> list[tuple[TaskInstance, Purpose]]:
    """The next `count` tasks of each purpose's queue, from `start`: fewer where a queue runs out."""
    return [
        (t, purpose)
        for purpose, queue in queues.items()
        for t in queue[start[purpose] : start[purpose] + count[purpose]]
    ]


def _built_index(task: TaskInstance) -> int:
    """The order the generate stage built abstention tasks in ('.../abstention/<kind>/<index>'), kinds interleaved."""
    return int(task.task_id.rpartition("/")[2])
