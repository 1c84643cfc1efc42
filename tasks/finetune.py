"""Stage 6, finetune: GRPO for the agent on this generation's rollout groups, then the simulator's update
(tasks/simulator_update.py: GRPO over each seed's variations, or RWR on D_env).

GRPO trains on the stored rollouts (token ids as generated), so nothing is generated twice. Both roles keep a KL
penalty to their initial adapter: each role's adapter after the warm start, frozen (the GenEnv paper); optimizer state
carries over from the previous generation's snapshot.
"""

from __future__ import annotations

import dataclasses
import math

import polars as pl

from genenv.curriculum.pools import draw, generation_rng, update_seed
from genenv.domains.base import AbstainingDomain, TaskInstance
from genenv.faults import crash_point
from genenv.models.grpo import GroupSample, group_advantages, grpo_update
from genenv.models.rwr import encode_example, weighted_sft
from genenv.pipeline.adapter_lineage import committed_checkpoints, own_adapters, reference_checkpoints, save_policy
from genenv.pipeline.context import GenerationRef, agent_sampling, load_tasks, pool_ids, progress_bar
from genenv.pipeline.contract import Adapters, StageOutput, generation_stage
from genenv.pipeline.training_log import training_rows
from genenv.tasks.agent_groups import AgentBatch, group_rows, record_batch, select_batch
from genenv.tasks.simulator_update import train_simulator

REPLAY_ABSTENTION_SHARE = 0.25


def agent_groups(ref: GenerationRef) -> tuple[list[GroupSample], AgentBatch]:
    """The samples GRPO trains on, and the batch they come from, recorded for the commit to report."""
    rows = group_rows(ref)
    batch = select_batch(ref, rows)
    record_batch(ref, batch)
    trained = rows.filter(pl.col("task_id").is_in(batch.trained), pl.col("sample_index") < ref.config.rollouts_per_task)
    samples = [
        GroupSample(
            r["prompt_ids"], r["completion_ids"], r["reward"], group=r["task_id"], loss_mask=r["completion_mask"]
        )
        for r in trained.iter_rows(named=True)
    ]
    return samples, batch


def replay_tasks(ref: GenerationRef) -> list[TaskInstance]:
    """`agent_replay_rows` D_train tasks whose gold answers anchor the agent, REPLAY_ABSTENTION_SHARE of them
    abstentions where the domain has them (BFCL irrelevance is what GRPO on calls erodes first)."""
    config, domain = ref.config, ref.domain
    if not config.agent_replay_rows:
        return []
    pool = list(load_tasks(ref, pool_ids(ref, "train", ref.generation - 1)).values())
    rng = generation_rng(config.seed, ref.generation, "replay")
    if not isinstance(domain, AbstainingDomain):
        return draw(pool, config.agent_replay_rows, rng)
    abstentions = [t for t in pool if domain.is_abstention(t)]
    calls = [t for t in pool if not domain.is_abstention(t)]
    count = min(round(REPLAY_ABSTENTION_SHARE * config.agent_replay_rows), len(abstentions))
    return draw(abstentions, count, rng) + draw(calls, config.agent_replay_rows - count, rng)


def adapters_trained(rewarded: StageOutput) -> Adapters | None:
    ref = rewarded.ref
    return own_adapters(ref) if ref.warehouse.has_rows("training", ref.run_id, ref.generation) else None


@generation_stage(
    done=adapters_trained,
    reads=("generations", "trajectories", "tasks", "pool", "batches", "rescores"),
    writes=("training",),
    gpu=True,
)
def finetune(rewarded: StageOutput) -> Adapters:
    ref = rewarded.ref
    config, warehouse = ref.config, ref.warehouse
    previous = committed_checkpoints(ref, ref.generation - 1)
    policy = ref.runtime.training(config, previous, reference_checkpoints(ref))

    samples, batch = agent_groups(ref)
    update = config.role_update("agent")
    steps = update.epochs * math.ceil(len(samples) / update.minibatch_size)
    with progress_bar(f"g{ref.generation} GRPO agent", steps, unit="step") as bar:
        agent_log = ref.runtime.fit(
            policy,
            grpo_update,
            "agent",
            samples,
            **update.grpo(),
            micro_batch_size=config.train_batch_size,
            seed=update_seed(config.seed, ref.generation),
            temperature=agent_sampling(config, ref.generation).logprob_temperature,
            progress=bar.update,
        )
    rows = training_rows(ref, "agent", "grpo", agent_log, update.lr, group_advantages(samples))
    replay = [
        encode_example(policy.tokenizer, m, reply)
        for t in replay_tasks(ref)
        for m, reply in ref.domain.demonstrations(t)
    ]
    if replay:
        with progress_bar(f"g{ref.generation} replay agent", len(replay)) as bar:
            replay_log = ref.runtime.fit(
                policy,
                weighted_sft,
                "agent",
                replay,
                **dataclasses.replace(update, kl_coef=0.0, epochs=1).sft(),  # one pass, no anchor: the gold answers
                batch_size=config.train_batch_size,
                seed=update_seed(config.seed, ref.generation),
                progress=bar.update,
            )
        rows += training_rows(ref, "agent", "replay", replay_log, update.lr)

    simulator_rows = train_simulator(ref, policy)
    rows += simulator_rows
    save_policy(ref, policy)
    crash_point(f"g{ref.generation}:finetune:saved")
    warehouse.append("training", rows)
    groups = {"groups_drawn": len(batch.drawn), "groups_trained": len(batch.trained)}
    return own_adapters(ref, {"agent_rows": len(samples), **groups, "simulator_steps": len(simulator_rows)})
