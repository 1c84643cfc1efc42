"""One rollout-shaped call in this process, then on Ray rollout workers (tasks/workers.py): one worker holding
every CPU, and two workers holding half each. Prints each path's time and how many answers equal the in-process
ones.

    python bench/scale_out.py [--tasks 24 --k 4 --batch-size 16 --precision bfloat16 --rounds 2 --models data/models]

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

from genenv.config import GenEnvConfig
from genenv.models.sampling import SamplingSettings
from genenv.models.transformers_backend import TransformersBackend
from genenv.tasks.workers import RayBackend, RayWorkers, WorkerSettings, keep_loopback


def main() -> None:
    args = rollout_arguments(__doc__.split("\n\n")[0], tasks=24)
    policy, tasks = agent_prompts(args)
    conversations = [task for task in tasks for _ in range(args.k)]
    sampling = SamplingSettings(max_new_tokens=48, temperature=0.7, top_p=0.9, seed=0)
    cpus = os.cpu_count() or 2
    keep_loopback("local")  # before ray is imported: the script's cluster stays on 127.0.0.1
    import ray

    # Both pools stay up between rounds but only one computes at a time: Ray counts each pool's CPUs apart.
    ray.init(num_cpus=2 * cpus, include_dashboard=False, log_to_driver=False)
    paths = {"in-process": TransformersBackend(policy, args.batch_size)}
    for count in (1, 2):
        config = GenEnvConfig(
            data_dir=str(args.models.parent),
            precision=args.precision,
            generation_batch_size=args.batch_size,
            ray_address="local",
            rollout_workers=count,
            worker_cpus=cpus / count,
        )
        workers = RayWorkers(WorkerSettings.of(config, config.placement))
        paths[f"{count} worker{'s' if count > 1 else ''}"] = RayBackend(workers, (None, None), 0)
    answers = {name: backend.generate("agent", conversations, sampling) for name, backend in paths.items()}
    seconds: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, backend in paths.items():
            started = time.perf_counter()
            backend.generate("agent", conversations, sampling)
            seconds[name].append(time.perf_counter() - started)
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


if __name__ == "__main__":
    main()
