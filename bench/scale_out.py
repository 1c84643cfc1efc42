"""One rollout-shaped call in this process, then on Ray rollout workers (runtime/pool.py): one worker holding
every CPU, and two workers holding half each. Prints each path's time and how many answers equal the in-process
ones. Then one GRPO update over the first `TRAIN_ROWS` of those answers (rewards alternating within each task's
group), in this process and data parallel on the same workers (`RayWorkers.fit`), and how far the adapters end apart.

    python bench/scale_out.py [--tasks 24 --k 4 --batch-size 16 --precision bfloat16 --rounds 2 --models data/models]
                              [--model DIR] [--smoke]

The Ray cluster is this script's own, on 127.0.0.1. Each pool answers one call first,
untimed, to load its models. The timed rounds then alternate the paths. The prompts are the agent's for the first
`--tasks` tool-call seeds, with `--k` sampled answers each at the demo's settings.

"1 worker against in-process" is what Ray adds to a stage: the shards, the transfers and the actor calls, on the
same CPUs. "2 workers against 1" is scaling, which 2 cores cannot show. Two workers with one thread each get no
more compute than one worker with two, so expect about 1x here; on a cluster each worker brings its own.
"""

from __future__ import annotations

import os
import time

import torch
from agent_prompts import agent_prompts, rollout_arguments  # bench/ is the script's folder
from options import base_model
from safetensors.torch import load

from genenv.config import GenEnvConfig
from genenv.models.grpo import GroupSample, grpo_update
from genenv.models.policy import PolicyPair
from genenv.models.sampling import Completion, SamplingSettings
from genenv.models.transformers_backend import TransformersBackend
from genenv.runtime.checkpoints import NO_CHECKPOINTS
from genenv.runtime.pool import RayBackend, RayWorkers, keep_loopback
from genenv.runtime.workers import WorkerSettings

TRAIN_ROWS = 16
UPDATE = {"lr": 1e-4, "kl_coef": 0.0, "epochs": 1, "minibatch_size": TRAIN_ROWS, "micro_batch_size": 4, "seed": 0}


def training_rows(answers: list[Completion], k: int) -> list[GroupSample]:
    """The answers as GRPO rows of their task's group, every other one rewarded: each group has a spread."""
    return [
        GroupSample(a.prompt_ids, a.completion_ids, float(i % 2), group=str(i // k))
        for i, a in enumerate(answers[:TRAIN_ROWS])
    ]


def timed_updates(
    policy: PolicyPair, pools: dict[str, RayWorkers], rows: list[GroupSample], rounds: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Best seconds of one GRPO update per path, alternating; each pool's adapter (rank 0's, as a stage saves it)
    against the in-process one (largest difference). Every path first takes the same two-row update, untimed (it
    loads the workers' copies)."""
    start, first = (NO_CHECKPOINTS, NO_CHECKPOINTS, 0), {**UPDATE, "minibatch_size": 2}
    grpo_update(policy, "agent", rows[:2], **first)
    for workers in pools.values():
        workers.fit(start, 0, grpo_update, "agent", rows[:2], **first)
    seconds: dict[str, list[float]] = {"in-process": [], **{name: [] for name in pools}}
    apart: dict[str, float] = {}
    for round_ in range(rounds):
        started = time.perf_counter()
        grpo_update(policy, "agent", rows, **UPDATE)
        seconds["in-process"].append(time.perf_counter() - started)
        reference = {k.replace(".agent.", "."): v for k, v in policy.adapter_state("agent").items()}
        for name, workers in pools.items():
            started = time.perf_counter()
            workers.fit(start, round_ + 1, grpo_update, "agent", rows, **UPDATE)
            seconds[name].append(time.perf_counter() - started)
            mine = load(workers.adapter_files(start, round_ + 2, "agent")["adapter_model.safetensors"])
            apart[name] = max(apart.get(name, 0.0), max((mine[k] - reference[k]).abs().max().item() for k in mine))
    return {name: min(times) for name, times in seconds.items()}, apart


def main() -> None:
    args = rollout_arguments(__doc__.split("\n\n")[0], tasks=24)
    policy, tasks = agent_prompts(args)
    conversations = [task for task in tasks for _ in range(args.k)]
    sampling = SamplingSettings(max_new_tokens=48, temperature=0.7, top_p=0.9, seed=0)
    cpus = os.cpu_count() or 2
    keep_loopback("local")  # before ray is imported: the script's cluster stays on 127.0.0.1
    import ray

    # Both pools stay up between rounds but only one computes at a time: Ray counts each pool's CPUs apart.
    ray.init(address="local", num_cpus=2 * cpus, include_dashboard=False, log_to_driver=False)
    paths = {"in-process": TransformersBackend(policy, args.batch_size)}
    pools: dict[str, RayWorkers] = {}
    for count in (1, 2):
        config = GenEnvConfig(
            model=str(base_model(args)),
            data_dir=str(args.models.parent),
            precision=args.precision,
            generation_batch_size=args.batch_size,
            ray_address="local",
            rollout_workers=count,
            worker_cpus=cpus / count,
        )
        name = f"{count} worker{'s' if count > 1 else ''}"
        pools[name] = RayWorkers(WorkerSettings.of(config, config.placement))
        paths[name] = RayBackend(pools[name], NO_CHECKPOINTS, 0)
    answers = {name: backend.generate("agent", conversations, sampling) for name, backend in paths.items()}
    seconds: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, backend in paths.items():
            started = time.perf_counter()
            backend.generate("agent", conversations, sampling)
            seconds[name].append(time.perf_counter() - started)
    rows = training_rows(answers["in-process"], args.k)
    updates, apart = timed_updates(policy, pools, rows, args.rounds)
    ray.shutdown()

    tokens = sum(len(c.completion_ids) for c in answers["in-process"])
    print(
        f"torch threads {torch.get_num_threads()}, {cpus} CPUs, load average {os.getloadavg()[0]:.1f}, "
        f"{args.precision}, {len(tasks)} tasks x {args.k} sampled answers ({tokens} tokens), best of {args.rounds}"
    )
    best = {name: min(times) for name, times in seconds.items()}
    reference = [c.completion_ids for c in answers["in-process"]]
    for name, time_ in best.items():
        same = sum(a.completion_ids == b for a, b in zip(answers[name], reference, strict=True))
        print(f"{name:<12} {time_:7.2f} s  {tokens / time_:6.1f} tok/s  answers as in-process: {same}/{len(reference)}")
    print(
        f"Ray's cost to a stage (1 worker / in-process): {best['1 worker'] / best['in-process']:.2f}x; "
        f"2 workers / 1 worker: {best['2 workers'] / best['1 worker']:.2f}x"
    )
    learned = sum(len(r.completion_ids) + len(r.prompt_ids) for r in rows)
    print(
        f"one GRPO update over {len(rows)} of those answers ({learned} prompt and answer tokens), best of {args.rounds}"
    )
    for name, time_ in updates.items():
        note = f"  adapter within {apart[name]:.1e} of in-process's" if name in apart else ""
        print(f"{name:<12} {time_:7.2f} s{note}")
    print(
        f"Ray's cost to an update (1 worker / in-process): {updates['1 worker'] / updates['in-process']:.2f}x; "
        f"2 data-parallel workers / 1 worker: {updates['2 workers'] / updates['1 worker']:.2f}x"
    )


if __name__ == "__main__":
    main()
