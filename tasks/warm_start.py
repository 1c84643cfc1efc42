"""Stage (generation 0): teach both adapters the output formats before GenEnv starts.

The agent learns seed task -> gold call; the simulator learns (seed task + answer -> a sibling seed of
the same functions with its answer). With `warm_start: false` the adapters start fresh (identical to
the base model) and are saved as generation 0's checkpoints all the same.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from genenv.curriculum.pools import draw, generation_rng
from genenv.domains.base import TaskInstance
from genenv.models.rwr import encode_example, weighted_sft
from genenv.tasks.context import load_tasks, pool_ids, progress_bar
from genenv.tasks.contract import Adapters, TaskSet, generation_stage
from genenv.tasks.runtime import current_runtime, own_adapters, own_checkpoints, save_policy
from genenv.tasks.training_log import training_rows
from genenv.warehouse.checkpoints import adapter_exists


def warm_started(seeds: TaskSet) -> Adapters | None:
    """Adapters are saved before the training rows are written, so both present means finished."""
    ref = seeds.ref
    saved = all(adapter_exists(c) for c in own_checkpoints(ref))
    trained = not ref.config.warm_start or ref.warehouse.has_rows("training", ref.run_id, ref.generation)
    return own_adapters(ref) if saved and trained else None


@generation_stage(done=warm_started, gpu=True)
def warm_start(seeds: TaskSet) -> Adapters:
    ref = seeds.ref
    config, warehouse, domain = ref.config, ref.warehouse, ref.domain
    policy = current_runtime().training(config, (None, None))
    if not config.warm_start:
        save_policy(ref, policy)
        return own_adapters(ref, {"agent_rows": 0, "simulator_rows": 0})

    rng = generation_rng(config.seed, 0, "warm-start")
    seeds = list(load_tasks(ref, pool_ids(ref, "train", 0)).values())
    chosen = draw(seeds, config.warm_start_examples or len(seeds), rng)
    tokenizer = policy.tokenizer
    agent_examples = [
        encode_example(tokenizer, messages, reply) for s in chosen for messages, reply in domain.demonstrations(s)
    ]
    simulator_examples = [
        encode_example(
            tokenizer,
            domain.simulator_messages(seed, success, alpha=config.alpha, k_min=config.k_min),
            domain.simulator_target(sibling),
        )
        for seed, sibling, success in sibling_pairs(seeds, chosen, rng, domain.sibling_key)
    ]
    rows = []
    for role, examples in (("agent", agent_examples), ("simulator", simulator_examples)):
        with progress_bar(f"g0 warm start {role}", config.warm_start_epochs * len(examples)) as bar:
            records = weighted_sft(
                policy,
                role,
                examples,
                lr=config.warm_start_lr,
                kl_coef=0.0,
                persist=False,
                epochs=config.warm_start_epochs,
                batch_size=config.train_batch_size,
                seed=config.seed,
                progress=bar.update,
            )
        rows += training_rows(ref, role, "warm_start", records, config.warm_start_lr)
    save_policy(ref, policy)
    warehouse.append("training", rows)
    return own_adapters(ref, {"agent_rows": len(agent_examples), "simulator_rows": len(simulator_examples)})


def sibling_pairs(
    seeds: list[TaskInstance],
    chosen: list[TaskInstance],
    rng: random.Random,
    sibling_key: Callable[[TaskInstance], str],
) -> list[tuple[TaskInstance, TaskInstance, float]]:
    """(seed, a sibling seed, a random success rate to show) for each chosen seed with a sibling: the simulator
    learns to write a variation of a seed (for tool_call, a new task for the same functions) under any success
    statistic."""
    by_key: dict[str, list[TaskInstance]] = {}
    for seed in seeds:
        by_key.setdefault(sibling_key(seed), []).append(seed)
    pairs = []
    for seed in chosen:
        siblings = [s for s in by_key[sibling_key(seed)] if s.task_id != seed.task_id]
        if siblings:
            success = round(rng.random(), 2)
            pairs.append((seed, rng.choice(siblings), success))
    return pairs
