"""Stage (generation 0): teach both adapters the output formats before GenEnv starts.

The agent learns seed task -> gold call; the simulator learns (seed task + answer -> a sibling seed of
the same functions with its answer). With `warm_start: false` the adapters start fresh (identical to
the base model) and are saved as generation 0's checkpoints all the same. Each epoch is staged as it ends, so a
stopped warm start resumes from its last finished epoch.
"""

from __future__ import annotations

import json
import random

from genenv.curriculum.pools import draw, generation_rng
from genenv.domains.base import AbstainingDomain, Domain, TaskInstance
from genenv.faults import crash_point
from genenv.models.policy import ROLES
from genenv.models.rwr import encode_example, weighted_sft
from genenv.pipeline.adapter_lineage import own_adapters, own_checkpoints, publish_policy, save_policy
from genenv.pipeline.context import GenerationRef, load_tasks, pool_ids, progress_bar
from genenv.pipeline.contract import Adapters, StageOutput, generation_stage
from genenv.pipeline.staging import read_staged_bytes, remove_staged, staging_path, write_staged_bytes
from genenv.pipeline.training_log import training_rows
from genenv.runtime.checkpoints import NO_CHECKPOINTS, Checkpoints
from genenv.runtime.interface import Trainee
from genenv.warehouse.checkpoints import adapter_exists

STAGED_EPOCHS = "warm_start"
"""The staged folder of the warm start's finished epochs (pipeline/staging.py), removed once the stage is done."""


def warm_started(seeds: StageOutput) -> Adapters | None:
    """Adapters are saved before the training rows are written, so both present means finished."""
    ref = seeds.ref
    saved = all(adapter_exists(c) for c in own_checkpoints(ref))
    trained = not ref.config.warm_start or ref.warehouse.has_rows("training", ref.run_id, ref.generation)
    return own_adapters(ref) if saved and trained else None


@generation_stage(done=warm_started, reads=("tasks", "pool"), writes=("training",), gpu=True)
def warm_start(seeds: StageOutput) -> Adapters:
    ref = seeds.ref
    config, warehouse, domain = ref.config, ref.warehouse, ref.domain
    staged = {role: staged_epochs(ref, role) for role in ROLES}
    policy = ref.runtime.training(config, resumed_checkpoints(ref, staged))
    if not config.warm_start:
        save_policy(ref, policy)
        return own_adapters(ref, {"agent_rows": 0, "simulator_rows": 0})

    rng = generation_rng(config.seed, 0, "warm-start")
    seed_tasks = list(load_tasks(ref, pool_ids(ref, "train", 0)).values())
    chosen = draw(seed_tasks, config.warm_start_examples or len(seed_tasks), rng)
    tokenizer = policy.tokenizer
    agent_examples = [
        encode_example(tokenizer, messages, reply) for s in chosen for messages, reply in domain.demonstrations(s)
    ]
    simulator_examples = [
        encode_example(
            tokenizer,
            domain.simulator_messages(seed_task, success, alpha=config.alpha, k_min=config.k_min),
            domain.simulator_target(sibling),
        )
        for seed_task, sibling, success in sibling_pairs(domain, seed_tasks, chosen, rng, config.alpha, config.k_min)
    ]
    rows = []
    for role, examples in zip(ROLES, (agent_examples, simulator_examples), strict=True):
        records = fit_by_epoch(ref, policy, role, examples, *staged[role])
        rows += training_rows(ref, role, "warm_start", records, config.warm_start_lr)
    save_policy(ref, policy)
    warehouse.append("training", rows)
    remove_staged(ref, STAGED_EPOCHS)
    return own_adapters(ref, {"agent_rows": len(agent_examples), "simulator_rows": len(simulator_examples)})


def staged_epochs(ref: GenerationRef, role: str) -> tuple[int, list[dict]]:
    """How many of `role`'s warm-start epochs an earlier attempt finished, with their step records (0 and none)."""
    for done in range(ref.config.warm_start_epochs, 0, -1):
        found = read_staged_bytes(ref, f"{STAGED_EPOCHS}/{role}-{done}.json")
        if found is not None:
            return done, json.loads(found)
    return 0, []


def resumed_checkpoints(ref: GenerationRef, staged: dict[str, tuple[int, list[dict]]]) -> Checkpoints:
    """The adapters the last staged epoch left (the roles train in turn, so the later role's, else the earlier's),
    or fresh ones where no epoch was staged."""
    for role in reversed(ROLES):
        done = staged[role][0]
        if done:
            return _epoch_checkpoints(ref, role, done)
    return NO_CHECKPOINTS


def fit_by_epoch(
    ref: GenerationRef, policy: Trainee, role: str, examples: list, done: int, records: list[dict]
) -> list[dict]:
    """`role`'s warm start from epoch `done` on, an epoch a call, each epoch's adapters, AdamW state and step records
    staged after it: a stopped run resumes after the last staged epoch (an epoch of laptop.yaml's agent took 38
    minutes on a CPU without bfloat16) and ends where an uninterrupted one does. No AdamW state outlives the last
    epoch, so generation 1 starts a fresh one, as it always has."""
    config, epochs = ref.config, ref.config.warm_start_epochs
    with progress_bar(f"g0 warm start {role}", epochs * len(examples)) as bar:
        bar.update(done * len(examples))
        for epoch in range(done, epochs):
            records = records + ref.runtime.fit(
                policy,
                weighted_sft,
                role,
                examples,
                lr=config.warm_start_lr,
                kl_coef=0.0,
                persist=True,
                keep_optimizer=epoch + 1 < epochs,
                epochs=1,
                first_epoch=epoch,
                batch_size=config.train_batch_size,
                seed=config.seed,
                progress=bar.update,
            )
            publish_policy(ref, policy, _epoch_checkpoints(ref, role, epoch + 1))
            write_staged_bytes(ref, f"{STAGED_EPOCHS}/{role}-{epoch + 1}.json", json.dumps(records).encode())
            crash_point("g0:warm-start:epoch")
    return records


def _epoch_checkpoints(ref: GenerationRef, role: str, epochs: int) -> tuple[str, str]:
    """Where both adapters are staged after `epochs` epochs of `role`'s warm start."""
    agent, simulator = (staging_path(ref, f"{STAGED_EPOCHS}/{role}-{epochs}/{adapter}", suffix="") for adapter in ROLES)
    return agent, simulator


def sibling_pairs(
    domain: Domain,
    seeds: list[TaskInstance],
    chosen: list[TaskInstance],
    rng: random.Random,
    alpha: float,
    k_min: float,
) -> list[tuple[TaskInstance, TaskInstance, float]]:
    """(seed, a sibling, the success rate to show) for each chosen seed with a sibling: the simulator learns to write a
    variation of a seed (for tool_call, a new task for the same functions) and to follow the difficulty hint. The
    sibling's difficulty level is drawn evenly among its kind's levels (`across_levels`), so harder, easier and similar
    pairs all occur: an update can only reinforce a difficulty the simulator sometimes writes.

    An abstention seed's sibling is an abstention too: another training request put to its means
    (`AbstainingDomain.abstention_task`), and a seed that needs an answer pairs with siblings that do. The rate
    shown is the one whose hint fits the pair (`fitting_success_rate`), not a random one the target ignores."""

    def kind(task: TaskInstance) -> tuple[str, bool]:
        return domain.sibling_key(task), isinstance(domain, AbstainingDomain) and domain.is_abstention(task)

    by_kind: dict[tuple[str, bool], list[TaskInstance]] = {}
    for seed in seeds:
        by_kind.setdefault(kind(seed), []).append(seed)
    pairs = []
    for index, seed in enumerate(chosen):
        if isinstance(domain, AbstainingDomain) and domain.is_abstention(seed):
            sibling = _built_abstention(domain, seed, seeds, rng, f"warm-start/abstention/{index}")
        else:
            siblings = [s for s in by_kind[kind(seed)] if s.task_id != seed.task_id]
            sibling = across_levels(domain, siblings, rng) if siblings else None
        if sibling is not None:
            difference = domain.difficulty(sibling) - domain.difficulty(seed)
            pairs.append((seed, sibling, fitting_success_rate(difference, alpha, k_min, rng)))
    return pairs


def across_levels(domain: Domain, siblings: list[TaskInstance], rng: random.Random) -> TaskInstance:
    """A sibling of a difficulty level drawn evenly among the siblings' levels, not in proportion to how many seeds
    each level has (the arithmetic seeds have twice as many 1- and 2-step problems as 4-step ones)."""
    levels = sorted({domain.difficulty(s) for s in siblings})
    level = rng.choice(levels)
    return rng.choice([s for s in siblings if domain.difficulty(s) == level])


def fitting_success_rate(difference: float, alpha: float, k_min: float, rng: random.Random) -> float:
    """A success rate, drawn from the part of [0, 1] whose difficulty hint (`difficulty_hint`) the pair follows: above
    the α band ("harder") when the sibling is harder than its seed, below it ("easier") when easier, inside it
    ("keep a similar difficulty") when as hard."""
    if difference > 0:
        low, high = alpha + k_min + 0.01, 1.0
    elif difference < 0:
        low, high = 0.0, alpha - k_min - 0.01
    else:
        low, high = alpha - k_min, alpha + k_min
    return min(max(round(rng.uniform(low, high), 2), 0.0), 1.0)


def _built_abstention(
    domain: AbstainingDomain, seed: TaskInstance, seeds: list[TaskInstance], rng: random.Random, task_id: str
) -> TaskInstance | None:
    """A training request that `seed`'s means cannot serve, put to them: tries the seeds in a seeded order."""
    for request in rng.sample(seeds, len(seeds)):
        built = domain.abstention_task(seed, request, task_id)
        if built is not None and built.spec != seed.spec:
            return built
    return None
