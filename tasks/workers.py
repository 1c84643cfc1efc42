"""Rollout workers on a Ray cluster (`ray_address`): the stages that generate split each call's conversations among
Ray actors that each hold the base model, in order, and gather the answers back in order.

Ray actors driven from inside the stage, not prefect-ray's task runner: a stage is one Prefect task with one output
and one resume check (tasks/contract.py), and a task runner would make each shard a Prefect task of its own, with
its own state to resume, while the shards of one call are nothing but one batch cut in pieces.

Each worker loads the base model once and a role's adapters from their published folders (the warehouse root, a
folder or S3), again only when the runtime's weights version moves, as the vLLM engine's LoRA mode does. A shard
samples with the random streams its rows have in the whole call (`first_row`), so the answers are the in-process
ones: greedy always, sampled ones for the same seed whatever the number of workers (in float32; bfloat16 rounds a
different batch differently, as in-process batching does). A worker that dies mid-call is restarted by Ray and its
shard answered again (`max_restarts`, `max_task_retries`), so a stage sees neither a gap nor a duplicate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from genenv.config import ConfigError, GenEnvConfig
from genenv.faults import crash_point
from genenv.models.generation import Completion, SamplingSettings, TransformersBackend
from genenv.models.loading import resolve_base_model
from genenv.models.policy import ROLES, LoraSettings, PolicyPair
from genenv.warehouse.checkpoints import fetch_adapter

Checkpoints = tuple[str | None, str | None]
RETRIES = 3
"""Restarts of a dead worker, and answers of a shard it held, before the stage fails (and Prefect retries it)."""


@dataclass(frozen=True)
class WorkerSettings:
    """What every worker is built from; a stage asking for other settings gets new workers."""

    model: str
    models_dir: str
    lora: LoraSettings
    seed: int
    precision: str
    batch_size: int
    cache_dir: str
    workers: int
    cpus: float
    gpus: float

    @classmethod
    def of(cls, config: GenEnvConfig) -> WorkerSettings:
        lora = LoraSettings(r=config.lora_r, alpha=config.lora_alpha, target_modules=config.lora_target_modules)
        cache = str(Path(config.data_dir).resolve() / "cache" / "checkpoints")
        return cls(
            config.model,
            str(Path(config.models_dir).resolve()),
            lora,
            config.seed,
            config.precision,
            config.generation_batch_size,
            cache,
            config.rollout_workers,
            config.worker_cpus,
            config.worker_gpus,
        )


class GenerationWorker:
    """One Ray actor's model: the base model with both roles' adapters as of (checkpoints, version)."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self.serving: tuple[Checkpoints, int] | None = None
        self.backend: TransformersBackend | None = None

    def generate(
        self,
        role: str,
        checkpoints: Checkpoints,
        version: int,
        conversations: list[list[dict[str, str]]],
        sampling: SamplingSettings,
        first_row: int,
    ) -> list[Completion]:
        if self.backend is None or self.serving != (checkpoints, version):
            s = self.settings
            cache = Path(s.cache_dir)
            adapters = {r: fetch_adapter(c, cache) if c else None for r, c in zip(ROLES, checkpoints, strict=True)}
            base = resolve_base_model(s.model, Path(s.models_dir))
            policy = PolicyPair.load(base, s.lora, adapters=adapters, seed=s.seed, precision=s.precision)
            self.backend = TransformersBackend(policy, s.batch_size)
            self.serving = (checkpoints, version)
        answers = self.backend.generate(role, conversations, sampling, first_row=first_row)
        crash_point("worker:answered")  # a worker dying with its shard's answers computed, not yet returned
        return answers


class RayWorkers:
    """The run's rollout workers, started on first use (joining `ray_address`, or the Ray session this process
    already holds) and killed with the runtime."""

    def __init__(self, config: GenEnvConfig) -> None:
        import ray

        if not ray.is_initialized():
            ray.init(address=config.ray_address)
        self.settings = WorkerSettings.of(config)
        check_room(self.settings, ray.cluster_resources())
        actor = ray.remote(
            num_cpus=self.settings.cpus,
            num_gpus=self.settings.gpus,
            max_restarts=RETRIES,
            max_task_retries=RETRIES,
        )(GenerationWorker)
        self.actors = [actor.remote(self.settings) for _ in range(self.settings.workers)]

    def close(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
        self.actors = []


def check_room(settings: WorkerSettings, cluster: dict[str, float]) -> None:
    """Refuse workers the whole cluster could never place: Ray would wait for them forever, without a word."""
    cpus, gpus = settings.workers * settings.cpus, settings.workers * settings.gpus
    if cpus > cluster.get("CPU", 0) or gpus > cluster.get("GPU", 0):
        raise ConfigError(
            f"rollout_workers: {settings.workers} workers need {cpus:g} CPUs and {gpus:g} GPUs (worker_cpus, "
            f"worker_gpus); the Ray cluster has {cluster.get('CPU', 0):g} CPUs and {cluster.get('GPU', 0):g} GPUs"
        )


def shard_bounds(rows: int, shards: int) -> list[tuple[int, int]]:
    """[start, end) of each shard: consecutive rows, sizes differing by at most one, empty shards left out."""
    sizes = [rows // shards + (i < rows % shards) for i in range(shards)]
    starts = [sum(sizes[:i]) for i in range(shards)]
    return [(start, start + size) for start, size in zip(starts, sizes, strict=True) if size]


class RayBackend:
    """`GenerationBackend` over the run's rollout workers, serving the adapters of `checkpoints` as of `version`."""

    def __init__(self, workers: RayWorkers, checkpoints: Checkpoints, version: int) -> None:
        self.workers = workers
        self.checkpoints = checkpoints
        self.version = version

    def generate(
        self,
        role: str,
        conversations: list[list[dict[str, str]]],
        sampling: SamplingSettings,
        progress: Callable[[int], None] | None = None,
    ) -> list[Completion]:
        """One completion per conversation, in input order; `progress(n)` gets each shard's rows as it returns."""
        import ray

        actors = self.workers.actors
        shards = shard_bounds(len(conversations), len(actors))  # empty shards left out: fewer than the actors
        pending: dict[Any, tuple[int, int]] = {
            actor.generate.remote(role, self.checkpoints, self.version, conversations[a:b], sampling, a): (a, b)
            for actor, (a, b) in zip(actors[: len(shards)], shards, strict=True)
        }
        answers: list[Completion | None] = [None] * len(conversations)
        while pending:
            [done], _ = ray.wait(list(pending), num_returns=1)
            a, b = pending.pop(done)
            answers[a:b] = ray.get(done)
            if progress is not None:
                progress(b - a)
        return answers  # type: ignore[return-value]
