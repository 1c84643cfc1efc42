"""Rollout workers on a Ray cluster (`ray_address`): the stages that generate split each call's conversations among
Ray actors that each hold the model, in order, and gather the answers back in order.

Ray actors driven from inside the stage, not prefect-ray's task runner: a stage is one Prefect task with one output
and one resume check (tasks/contract.py), and a task runner would make each shard a Prefect task of its own, with
its own state to resume, while the shards of one call are nothing but one batch cut in pieces.

Each worker loads the policy (base model and both adapters, from their published folders: the warehouse root, a
folder or S3) on its first call, and again whenever the adapters or the runtime's weights version move, as the vLLM
engine's LoRA mode does. With `backend: vllm` it also starts a vLLM engine on its first call and keeps it, serving
each policy it loads (its adapter folders, or its merged weights). A shard samples with the random streams its rows
have in the whole call (`first_row`), so the answers are the in-process ones: greedy always, sampled ones for the
same seed whatever the number of workers (in float32; bfloat16 rounds a different batch differently, as in-process
batching does). A worker that dies mid-call is restarted by Ray and its shard answered again (`RETRIES`), so a stage
sees neither a gap nor a duplicate; past that, the stage fails, the runtime drops the workers, and a retry of the
stage starts new ones.

The same workers are the ranks of data-parallel training (`RayWorkers.fit`): for one update they join a process
group of their own (gloo on CPU, NCCL on GPU; vLLM holds torch's default one), the engine asleep meanwhile, each
computes its share of every step's rows, and all take the same step (models/data_parallel.py). Rank 0 hands the
trained adapter and its AdamW state back to the flow's copy of the policy, which saves and publishes it as after an
update in-process. A worker keeps its trained copy for the stage's next update (the replay after GRPO, the
simulator's update). Ranks rather than `accelerate launch`: the workers already hold the model on their devices, and
a second set of processes beside them would load it twice. A rank that dies fails the update, with no restart (its
peers would wait in a collective for a rank that restarted empty). A lost rank is a transient error (`WorkerLost`):
the stage's retry runs the update again from the start, on new workers.
"""

from __future__ import annotations

import gc
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genenv.config import ConfigError, GenEnvConfig, Placement, ray_host_port
from genenv.faults import crash_point
from genenv.models.backends import BACKENDS
from genenv.models.data_parallel import joined
from genenv.models.loading import resolve_base_model
from genenv.models.policy import ROLES, LoraSettings, PolicyPair
from genenv.models.sampling import Completion, SamplingSettings
from genenv.models.transformers_backend import TransformersBackend
from genenv.warehouse.checkpoints import fetch_adapter

if TYPE_CHECKING:
    from genenv.models.vllm import VllmBackend, VllmEngine

Checkpoints = tuple[str | None, str | None]
NO_CHECKPOINTS: Checkpoints = (None, None)
RETRIES = 3
"""Restarts of a dead worker, and answers of a shard it held, before the stage fails."""
START_SECONDS = 600.0
"""How long new workers may take to be placed and started before the stage says why it cannot go on."""
COLLECTIVE_SECONDS = 600
"""How long a rank waits in a collective (a gradient sum) for its peers before the update fails."""
Update = Callable[..., list[dict]]
"""A training update, `update(policy, role, rows, **settings) -> step records`: `grpo_update` or `weighted_sft`."""
TrainingKey = tuple[Checkpoints, Checkpoints, int]
"""(adapters, KL references, the runtime's weights version) a stage's updates start from."""


class WorkerLost(RuntimeError):
    """A rank died or failed in a data-parallel update. Transient (tasks/options.py): Prefect retries the stage, whose
    `ModelRuntime.training` starts the update over, on new workers (the runtime drops the broken ones)."""

    transient = True


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
    placement: Placement
    backend: str
    vllm_adapters: str

    @classmethod
    def of(cls, config: GenEnvConfig, placement: Placement) -> WorkerSettings:
        """Paths made absolute here: a worker's working folder is Ray's, not the flow's."""
        local = Path(config.model).expanduser()
        model = str(local.resolve()) if local.exists() else config.model
        return cls(
            model,
            str(Path(config.models_dir).resolve()),
            LoraSettings.of(config),
            config.seed,
            config.precision,
            config.generation_batch_size,
            str(adapter_cache(config)),
            placement,
            config.backend,
            config.vllm_adapters,
        )


def adapter_cache(config: GenEnvConfig) -> Path:
    """Where remote adapters are downloaded to, under the data folder."""
    return Path(config.data_dir).resolve() / "cache" / "checkpoints"


def local_adapters(folders: Checkpoints, cache: Path) -> dict[str, Path | None]:
    """Each role's adapter as a local folder (a download cached under `cache` when it is remote); None: fresh."""
    return {role: fetch_adapter(c, cache) if c else None for role, c in zip(ROLES, folders, strict=True)}


class GenerationWorker:
    """One Ray actor's model: the base model with both roles' adapters as of (checkpoints, version)."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self.serving: tuple[Checkpoints, int] | None = None
        self.backend: TransformersBackend | VllmBackend | None = None
        self.engine: VllmEngine | None = None
        """With `backend: vllm`: this worker's engine, started by its first call, kept while the worker lives."""
        self.loads = 0
        """Policies this worker has loaded: the weights version its engine's merged weights are keyed by."""
        self.trainer: PolicyPair | None = None
        self.trainer_key: tuple[TrainingKey, int] | None = None
        """With `trainer`: where the trained copy started, how many updates it has taken since."""

    def ready(self) -> bool:
        return True

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
            self.backend = self._backend(self._loaded(checkpoints), checkpoints)
            self.serving = (checkpoints, version)
        answers = self.backend.generate(role, conversations, sampling, first_row=first_row)
        crash_point("worker:answered")  # a worker dying with its shard's answers computed, not yet returned
        return answers

    def _backend(self, policy: PolicyPair, checkpoints: Checkpoints) -> TransformersBackend | VllmBackend:
        """The configured backend over `policy`; a vLLM one on this worker's engine, serving `checkpoints`."""
        s = self.settings
        if s.backend != "vllm":
            return BACKENDS[s.backend](policy, batch_size=s.batch_size)
        from genenv.models.vllm import EngineSettings, VllmEngine

        if self.engine is None:
            self.engine = VllmEngine(
                EngineSettings(
                    model=str(resolve_base_model(s.model, Path(s.models_dir))),
                    dtype=s.precision,
                    adapters=s.vllm_adapters,
                    lora_rank=s.lora.r,
                    gpu_memory_utilization=s.placement.vllm_gpu_memory_utilization,
                )
            )
        adapters = local_adapters(checkpoints, Path(s.cache_dir))
        return BACKENDS[s.backend](
            policy, batch_size=s.batch_size, engine=self.engine, adapters=adapters, version=self.loads
        )

    def _loaded(self, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS) -> PolicyPair:
        """The policy as of `checkpoints` (KL references: `references`), in place of whatever this worker held: the
        old copy goes before the new one loads, not after."""
        self.backend = self.serving = self.trainer = self.trainer_key = None
        gc.collect()
        self.loads += 1
        s = self.settings
        cache = Path(s.cache_dir)
        return PolicyPair.load(
            resolve_base_model(s.model, Path(s.models_dir)),
            s.lora,
            adapters=local_adapters(checkpoints, cache),
            references=local_adapters(references, cache),
            seed=s.seed,
            precision=s.precision,
        )

    def meeting_point(self) -> tuple[str, int]:
        """This node's address and a free port on it, where the ranks of one update meet (rank 0's)."""
        import ray

        host = ray.util.get_node_ip_address()
        with socket.socket() as probe:
            probe.bind((host, 0))
            return host, probe.getsockname()[1]

    def fit(
        self,
        rank: int,
        world: int,
        meeting: tuple[str, int],
        start: TrainingKey,
        done: int,
        update: Update,
        role: str,
        rows: list,
        settings: dict[str, Any],
    ) -> tuple[list[dict], int, dict, dict | None] | None:
        """Rank `rank` of one data-parallel update of `role` on the policy as of `start`, after the `done` updates
        the stage made on it before; rank 0 returns (records, progress counted, the role's weights, its AdamW state),
        the others None."""
        if self.trainer_key is None or self.trainer_key[0] != start:
            if done:
                raise RuntimeError(f"rank {rank} restarted after {done} updates of this stage: its copy is lost")
            checkpoints, references, _ = start
            self.trainer = self._loaded(checkpoints, references)
            self.trainer_key = (start, 0)
        if self.trainer_key[1] != done:
            raise RuntimeError(f"rank {rank} holds {self.trainer_key[1]} of the stage's {done} earlier updates")
        if self.engine is not None:
            self.engine.sleep()  # on a GPU, room for the update; the engine wakes for the next call that generates
        timeout = timedelta(seconds=COLLECTIVE_SECONDS)
        counted: list[int] = []
        try:
            with joined(meeting, rank, world, self.trainer.device, timeout):
                records = update(self.trainer, role, rows, progress=counted.append, **settings)
            self.trainer_key = (start, done + 1)
        except BaseException:
            self.trainer = self.trainer_key = None  # half an update: never the start of the next
            raise
        if rank != 0:
            return None
        return records, sum(counted), self.trainer.adapter_state(role), self.trainer.optimizer_states.get(role)


class RayWorkers:
    """The run's rollout workers: connected to `ray_address` (or to the Ray session this process already holds),
    started, and waited for until each is placed; killed with the runtime, the connection closed if it was ours."""

    def __init__(self, settings: WorkerSettings) -> None:
        placement = settings.placement
        keep_loopback(placement.ray_address)
        import ray

        self.connected = not ray.is_initialized()
        if self.connected:
            ray.init(address=placement.ray_address)
        self.settings = settings
        self.broken = False
        check_room(placement, ray.cluster_resources())
        actor = ray.remote(
            num_cpus=placement.worker_cpus,
            num_gpus=placement.worker_gpus,
            max_restarts=RETRIES,
            max_task_retries=RETRIES,
        )(GenerationWorker)
        self.actors = [actor.remote(settings) for _ in range(placement.rollout_workers)]
        try:
            ray.get([a.ready.remote() for a in self.actors], timeout=START_SECONDS)
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise ConfigError(
                f"rollout_workers: {placement.rollout_workers} workers of {placement.worker_cpus:g} CPUs and "
                f"{placement.worker_gpus:g} GPUs were not placed within {START_SECONDS:g} s: the Ray cluster at "
                f"{placement.ray_address!r} has {ray.available_resources()} free"
            ) from None

    def fit(
        self,
        start: TrainingKey,
        done: int,
        policy: PolicyPair,
        update: Update,
        role: str,
        rows: list,
        progress: Callable[[int], None] | None = None,
        **settings: Any,
    ) -> list[dict]:
        """`update(policy, role, rows, **settings)` run data parallel, one rank per worker, each on its copy of the
        policy as of `start` after the stage's `done` earlier updates; `policy` (the flow's copy, in the same state)
        then takes rank 0's weights and AdamW state."""
        import ray

        meeting = ray.get(self.actors[0].meeting_point.remote())
        calls = [
            actor.fit.options(max_task_retries=0).remote(
                rank, len(self.actors), meeting, start, done, update, role, rows, settings
            )
            for rank, actor in enumerate(self.actors)
        ]
        try:
            [(records, counted, weights, optimizer), *_] = ray.get(calls)
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as lost:
            self.broken = True
            raise WorkerLost(f"a rank of the {role} update on {len(self.actors)} workers was lost: {lost}") from lost
        policy.load_adapter_state(role, weights, optimizer)
        if progress is not None:
            progress(counted)
        return records

    def close(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
        if self.connected:
            ray.shutdown()


SINGLE_MACHINE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch for clusters of one machine: set to 0, Ray keeps 127.0.0.1 as it is. Read when ray is first imported."""


def keep_loopback(address: str) -> None:
    """Before Ray is imported: a cluster on this machine's loopback ('local', 127.0.0.1, localhost) stays there. On
    Linux Ray rewrites a loopback address to the machine's network address before it connects or binds, where a head
    started on 127.0.0.1 (`genenv stack up --ray-port`, the tests) does not listen."""
    if address == "local" or ray_host_port(address)[0] in ("127.0.0.1", "localhost"):
        os.environ.setdefault(SINGLE_MACHINE, "0")


def check_room(placement: Placement, cluster: dict[str, float]) -> None:
    """Refuse workers the whole cluster could never place: Ray would wait for them forever, without a word."""
    cpus = placement.rollout_workers * placement.worker_cpus
    gpus = placement.rollout_workers * placement.worker_gpus
    if cpus > cluster.get("CPU", 0) or gpus > cluster.get("GPU", 0):
        raise ConfigError(
            f"rollout_workers: {placement.rollout_workers} workers need {cpus:g} CPUs and {gpus:g} GPUs (worker_cpus, "
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
        """One completion per conversation, in input order; `progress(n)` gets each shard's rows as it returns. A
        worker dead past its restarts marks the workers broken, for the runtime to replace, and fails the call."""
        import ray

        actors = self.workers.actors
        shards = shard_bounds(len(conversations), len(actors))  # empty shards left out: fewer than the actors
        pending: dict[Any, tuple[int, int]] = {
            actor.generate.remote(role, self.checkpoints, self.version, conversations[a:b], sampling, a): (a, b)
            for actor, (a, b) in zip(actors[: len(shards)], shards, strict=True)
        }
        answers: list[Completion | None] = [None] * len(conversations)
        try:
            while pending:
                [done], _ = ray.wait(list(pending), num_returns=1)
                a, b = pending.pop(done)
                answers[a:b] = ray.get(done)
                if progress is not None:
                    progress(b - a)
        except ray.exceptions.RayActorError:
            self.workers.broken = True
            raise
        return answers  # type: ignore[return-value]
