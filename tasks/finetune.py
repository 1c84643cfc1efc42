"""Stage 5, finetune: GRPO for the agent on this generation's rollout groups; RWR for the simulator on D_env.

GRPO trains on the stored rollouts (token ids as generated), so nothing is generated twice. RWR is
weighted SFT on (conditioning context -> generated task) with a KL penalty to the initial simulator.
"Initial" is each role's adapter after the warm start, frozen (PAPER.md); optimizer state carries over
from the previous generation's snapshot.
"""

from __future__ import annotations

import json
import math

import polars as pl

from genenv.curriculum.pools import draw, generation_rng
from genenv.faults import crash_point
from genenv.models.grpo import GroupSample, grpo_update
from genenv.models.rwr import encode_example, weighted_sft
from genenv.tasks.context import GenerationRef, load_tasks, progress_bar
from genenv.tasks.contract import Adapters, Rewarded, generation_stage
from genenv.tasks.runtime import (
    committed_checkpoints,
    current_runtime,
    own_adapters,
    reference_checkpoints,
    save_policy,
)
from genenv.tasks.training_log import training_rows


def agent_groups(ref: GenerationRef) -> list[GroupSample]:
    rows = ref.warehouse.read("trajectories", run_id=ref.run_id, generation=ref.generation)
    rows = rows.filter(pl.col("purpose").is_in(["fresh", "pool"])).sort("trajectory_id")
    return [
        GroupSample(
            r["prompt_ids"], r["completion_ids"], r["reward"], group=r["task_id"], loss_mask=r["completion_mask"]
        )
        for r in rows.iter_rows(named=True)
    ]


def simulator_records(ref: GenerationRef) -> list[tuple[list[dict], str, float]]:
    """(context messages, target text, RWR weight) for a seeded draw of D_env as of this generation."""
    config, domain = ref.config, ref.domain
    env = ref.warehouse.read("pool", run_id=ref.run_id, pool="env")
    env = env.filter(env["generation"] <= ref.generation).sort("generation", "task_id")
    weights = dict(env.select("task_id", "weight").iter_rows())
    chosen = draw(list(weights), config.simulator_max_records, generation_rng(config.seed, ref.generation, "d-env"))
    contexts = dict(
        ref.warehouse.read("tasks", run_id=ref.run_id)
        .filter(pl.col("task_id").is_in(chosen))
        .select("task_id", "simulator_context")
        .iter_rows()
    )
    tasks = load_tasks(ref, chosen)
    return [(json.loads(contexts[t]), domain.simulator_target(tasks[t]), weights[t]) for t in chosen]


def adapters_trained(rewarded: Rewarded) -> Adapters | None:
    ref = rewarded.ref
    return own_adapters(ref) if ref.warehouse.has_rows("training", ref.run_id, ref.generation) else None


@generation_stage(done=adapters_trained, gpu=True)
def finetune(rewarded: Rewarded) -> Adapters:
    ref = rewarded.ref
    config, warehouse = ref.config, ref.warehouse
    previous = committed_checkpoints(ref, ref.generation - 1)
    policy = current_runtime().training(config, previous, reference_checkpoints(ref))

    samples = agent_groups(ref)
    steps = config.agent_epochs * math.ceil(len(samples) / config.agent_minibatch_size)
    with progress_bar(f"g{ref.generation} GRPO agent", steps, unit="step") as bar:
        agent_log = grpo_update(
            policy,
            "agent",
            samples,
            lr=config.agent_lr,
            kl_coef=config.agent_kl_coef,
            epochs=config.agent_epochs,
            minibatch_size=config.agent_minibatch_size,
            micro_batch_size=config.train_batch_size,
            clip_epsilon=config.agent_clip_epsilon,
            seed=config.seed + ref.generation,
            progress=bar.update,
        )
    rows = training_rows(ref, "agent", "grpo", agent_log, config.agent_lr)

    records = simulator_records(ref) if config.simulator_training else []
    examples = [encode_example(policy.tokenizer, ctx, target, weight) for ctx, target, weight in records]
    if examples:
        with progress_bar(f"g{ref.generation} RWR simulator", config.simulator_epochs * len(examples)) as bar:
            simulator_log = weighted_sft(
                policy,
                "simulator",
                examples,
                lr=config.simulator_lr,
                kl_coef=config.simulator_kl_coef,
                epochs=config.simulator_epochs,
                batch_size=config.train_batch_size,
                seed=config.seed + ref.generation,
                progress=bar.update,
            )
        rows += training_rows(ref, "simulator", "rwr", simulator_log, config.simulator_lr)
    save_policy(ref, policy)
    crash_point(f"g{ref.generation}:finetune:saved")
    warehouse.append("training", rows)
    return own_adapters(ref, {"agent_rows": len(samples), "simulator_rows": len(examples)})
