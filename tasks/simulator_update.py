"""The simulator's update inside the finetune stage: GRPO over each seed's variations, or the paper's RWR on D_env.

GRPO (the default) trains on this generation's outputs as generated: the n variations of one seed are a group, each
valid one rewarded by its own R_env and normalised among the group's valid ones, each rejected one pushed down by
`simulator_invalid_advantage`, so the update moves the simulator towards the variations the agent solved nearer α
and, apart from that, away from invalid ones. RWR is Algorithm 1's: weighted SFT on a draw of
D_env, the in-band tasks of every generation so far, w ∝ exp(λ R_env).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import polars as pl

from genenv.config import ConfigError
from genenv.curriculum.batches import simulator_advantages
from genenv.curriculum.pools import draw, generation_rng, update_seed, whole_groups
from genenv.models.grpo import GroupSample, grpo_update
from genenv.models.rwr import encode_example, weighted_sft
from genenv.pipeline.context import GenerationRef, load_tasks, progress_bar, simulator_sampling
from genenv.pipeline.training_log import training_rows
from genenv.runtime.interface import Trainee


def train_simulator(ref: GenerationRef, policy: Trainee) -> list[dict]:
    """The simulator's `training` rows for this generation (none when it is frozen or has nothing to learn from)."""
    if not ref.config.simulator_training:
        return []
    return SIMULATOR_UPDATES[ref.config.simulator_update](ref, policy)


def simulator_groups(ref: GenerationRef) -> tuple[list[GroupSample], list[float]]:
    """One sample per simulator output of this generation, grouped by seed batch, rewarded by its `batches` row, with
    its advantage: normalised among the group's scored outputs (valid ones and their repeats), the config's
    simulator_invalid_advantage for a rejected one. At most `simulator_max_records` outputs, in whole groups drawn at
    random where there are more."""
    config = ref.config
    tasks = ref.warehouse.read("tasks", run_id=ref.run_id, generation=ref.generation).filter(origin="simulator")
    if tasks["simulator_completion_ids"].null_count():
        raise ConfigError(
            f"simulator_update: grpo trains on the simulator's token ids, and run {ref.run_id} generation "
            f"{ref.generation} stored its outputs before they were kept; continue it with simulator_update=rwr"
        )
    units = ref.warehouse.read("batches", run_id=ref.run_id, generation=ref.generation).drop_nulls("task_id")
    scores = {row["task_id"]: row for row in units.iter_rows(named=True)}
    sizes = dict(tasks["batch_id"].value_counts().iter_rows())
    kept = whole_groups(sizes, config.simulator_max_records, generation_rng(config.seed, ref.generation, "sim-groups"))
    rows = [row for row in tasks.sort("task_id").iter_rows(named=True) if row["batch_id"] in kept]
    samples = [
        GroupSample(
            row["simulator_prompt_ids"],
            row["simulator_completion_ids"],
            scores[row["task_id"]]["generator_reward"],
            row["batch_id"],
        )
        for row in rows
    ]
    rewards = [None if scores[r["task_id"]]["p_hat"] is None else s.reward for r, s in zip(rows, samples, strict=True)]
    advantages = simulator_advantages([s.group for s in samples], rewards, config.simulator_invalid_advantage)
    return samples, advantages


def grpo_simulator(ref: GenerationRef, policy: Trainee) -> list[dict]:
    config = ref.config
    samples, advantages = simulator_groups(ref)
    update = config.role_update("simulator")
    steps = update.epochs * math.ceil(len(samples) / update.minibatch_size)
    with progress_bar(f"g{ref.generation} GRPO simulator", steps, unit="step") as bar:
        records = ref.runtime.fit(
            policy,
            grpo_update,
            "simulator",
            samples,
            **update.grpo(),
            micro_batch_size=config.train_batch_size,
            seed=update_seed(config.seed, ref.generation),
            temperature=simulator_sampling(config, ref.generation).logprob_temperature,
            advantages=advantages,
            progress=bar.update,
        )
    return training_rows(ref, "simulator", "grpo", records, update.lr, advantages)


def drawable_records(ref: GenerationRef) -> dict[str, float]:
    """D_env's records the simulator may train on this generation, with their RWR weights, in the order they joined:
    every record, or with simulator_pool_rescore this generation's and the earlier ones whose p̂ now (`rescores`)
    keeps them in the band, at their new weight."""
    env = ref.warehouse.read("pool", run_id=ref.run_id, pool="env")
    env = env.filter(env["generation"] <= ref.generation).sort("generation", "task_id")
    weights: dict[str, float] = dict(env.select("task_id", "weight").iter_rows())
    if not ref.config.simulator_pool_rescore:
        return weights
    rescored = ref.warehouse.read("rescores", run_id=ref.run_id, generation=ref.generation).filter(in_band=True)
    now: dict[str, float] = dict(rescored.select("task_id", "rwr_weight").iter_rows())
    joined = set(env.filter(generation=ref.generation)["task_id"])
    return {t: now.get(t, w) for t, w in weights.items() if t in joined or t in now}


def simulator_records(ref: GenerationRef, weights: dict[str, float]) -> list[tuple[list[dict], str, float]]:
    """(context messages, target text, RWR weight) for a seeded draw of the drawable records (`weights`)."""
    config, domain = ref.config, ref.domain
    chosen = draw(list(weights), config.simulator_max_records, generation_rng(config.seed, ref.generation, "d-env"))
    contexts = dict(
        ref.warehouse.read("tasks", run_id=ref.run_id)
        .filter(pl.col("task_id").is_in(chosen))
        .select("task_id", "simulator_context")
        .iter_rows()
    )
    tasks = load_tasks(ref, chosen)
    return [(json.loads(contexts[t]), domain.simulator_target(tasks[t]), weights[t]) for t in chosen]


def rwr_simulator(ref: GenerationRef, policy: Trainee) -> list[dict]:
    """RWR on a draw of D_env's drawable records, once there are simulator_min_records of them."""
    config = ref.config
    drawable = drawable_records(ref)
    if len(drawable) < config.simulator_min_records:  # at least 1
        return []
    examples = [encode_example(policy.tokenizer, c, t, w) for c, t, w in simulator_records(ref, drawable)]
    update = config.role_update("simulator")
    with progress_bar(f"g{ref.generation} RWR simulator", update.epochs * len(examples)) as bar:
        records = ref.runtime.fit(
            policy,
            weighted_sft,
            "simulator",
            examples,
            **update.sft(),
            batch_size=config.train_batch_size,
            seed=update_seed(config.seed, ref.generation),
            progress=bar.update,
        )
    return training_rows(ref, "simulator", "rwr", records, update.lr, [e.weight for e in examples])


SIMULATOR_UPDATES: dict[str, Callable[[GenerationRef, Trainee], list[dict]]] = {
    "grpo": grpo_simulator,
    "rwr": rwr_simulator,
}
"""config.simulator_update -> the update (genenv.config.SIMULATOR_UPDATES names the same keys)."""
