"""The run's Ray rollout workers (`ray_address`): started in a placement group, one bundle per worker; each call's
conversations split among them in order and gathered back in order; an update run on all of them as ranks.

Ray actors driven from inside the stage, not prefect-ray's task runner: a stage is one Prefect task with one output
and one resume check (pipeline/contract.py), and a task runner would make each shard a Prefect task of its own, with
its own state to resume, while the shards of one call are nothing but one batch cut in pieces.

A worker that dies mid-call is restarted by Ray and its shard answered again (`RETRIES`), so a stage sees neither
a gap nor a duplicate; past that, the stage fails, the runtime drops the workers, and a retry of the stage starts
new ones. A rank that dies fails its update, with no restart (its peers would wait in a collective for a rank that
restarted empty): a transient error, and the stage's retry runs the update again from the start, on new workers.
Out of memory, or the same error on every rank, fails the stage at once (failures.py). Ranks rather than
`accelerate launch`: the workers already hold the model on their devices, and a second set of processes beside
them would load it twice.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from genenv.config import ConfigError, Placement
from genenv.models.sampling import Completion, SamplingSettings
from genenv.runtime.checkpoints import Checkpoints
from genenv.runtime.cluster import ray_host_port
from genenv.runtime.failures import PLAN_HINT, WorkerFailed, WorkerLost, classified, out_of_memory
from genenv.runtime.interface import TrainingKey, Update
from genenv.runtime.workers import GenerationWorker, WorkerSettings

RETRIES = 3
"""Restarts of a dead worker, and answers of a shard it held, before the stage fails."""
START_SECONDS = 600.0
"""How long new workers may take to be placed and started before the stage says why it cannot go on."""


class RayWorkers:
    """The run's rollout workers: connected to `ray_address` (or to the Ray session this process already holds),
    placed together (a placement group of one bundle of CPUs and GPUs per worker, so each worker's engine and
    trainer share its GPU), started, and waited for; killed with the runtime, the connection closed if it was ours."""

    def __init__(self, settings: WorkerSettings) -> None:
        placement = settings.placement
        keep_loopback(placement.ray_address)
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self.connected = not ray.is_initialized()
        if self.connected:
            ray.init(address=placement.ray_address)
        self.settings = settings
        self.broken = False
        self.actors: list[Any] = []
        check_room(placement, ray.cluster_resources())
        self.group = placement_group([worker_bundle(placement)] * placement.rollout_workers, strategy="PACK")
        actor = ray.remote(max_restarts=RETRIES, max_task_retries=RETRIES)(GenerationWorker)
        self.actors = [
            actor.options(
                num_cpus=placement.worker_cpus,
                num_gpus=placement.worker_gpus,
                scheduling_strategy=PlacementGroupSchedulingStrategy(self.group, placement_group_bundle_index=index),
            ).remote(settings)
            for index in range(placement.rollout_workers)
        ]
        try:
            ray.get([self.group.ready(), *(a.ready.remote() for a in self.actors)], timeout=START_SECONDS)
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
        update: Update,
        role: str,
        rows: list,
        progress: Callable[[int], None] | None = None,
        **settings: Any,
    ) -> list[dict]:
        """`update(policy, role, rows, **settings)` run data parallel, one rank per worker, each on its copy of the
        policy as of `start` after the stage's `done` earlier updates; rank 0's step records."""
        import ray

        meeting = ray.get(self.actors[0].meeting_point.remote())
        calls = [
            actor.fit.options(max_task_retries=0).remote(
                rank, len(self.actors), meeting, start, done, update, role, rows, settings
            )
            for rank, actor in enumerate(self.actors)
        ]
        results: list[Any] = []
        errors: list[BaseException | None] = []
        lost: list[bool] = []
        for call in calls:  # every rank's outcome, not the first failure: what they share says what failed
            try:
                results.append(ray.get(call))
                errors.append(None)
                lost.append(False)
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as error:
                results.append(None)
                errors.append(error)
                lost.append(isinstance(error, ray.exceptions.RayActorError))
        if any(errors):
            self.broken = True
            raise classified(f"the {role} update", errors, lost) from next(e for e in errors if e)
        records, counted = results[0]
        if progress is not None:
            progress(counted)
        return records

    def adapter_files(self, start: TrainingKey, done: int, role: str) -> dict[str, bytes]:
        """Rank 0's `role` adapter after the stage's `done` updates from `start` (GenerationWorker.adapter_files)."""
        import ray

        try:
            return ray.get(self.actors[0].adapter_files.remote(start, done, role))
        except ray.exceptions.RayActorError as error:
            self.broken = True
            raise WorkerLost(f"the worker holding the {role} adapter was lost: {error}") from error

    def history(self) -> list[list[str]]:
        """Each worker's events (GenerationWorker.events), for the tests."""
        import ray

        return ray.get([actor.history.remote() for actor in self.actors])

    def close(self) -> None:
        import ray
        from ray.util.placement_group import remove_placement_group

        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
        remove_placement_group(self.group)
        if self.connected:
            ray.shutdown()


def worker_bundle(placement: Placement) -> dict[str, float]:
    """One worker's share of the cluster: its CPUs, and its GPUs when it has any (Ray refuses a bundle of 0)."""
    return {"CPU": placement.worker_cpus, **({"GPU": placement.worker_gpus} if placement.worker_gpus else {})}


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
        first_row: int = 0,
    ) -> list[Completion]:
        """One completion per conversation, in input order; `progress(n)` gets each shard's rows as it returns. A
        worker dead past its restarts marks the workers broken, for the runtime to replace, and fails the call as
        transient; out of memory fails it for good."""
        import ray

        actors = self.workers.actors
        shards = shard_bounds(len(conversations), len(actors))  # empty shards left out: fewer than the actors
        pending: dict[Any, tuple[int, int]] = {}
        for actor, (a, b) in zip(actors[: len(shards)], shards, strict=True):  # each shard sampled as in the call
            call = actor.generate.remote(
                role, self.checkpoints, self.version, conversations[a:b], sampling, first_row + a
            )
            pending[call] = (a, b)
        answers: list[Completion | None] = [None] * len(conversations)
        try:
            while pending:
                [done], _ = ray.wait(list(pending), num_returns=1)
                a, b = pending.pop(done)
                answers[a:b] = ray.get(done)
                if progress is not None:
                    progress(b - a)
        except ray.exceptions.RayActorError as lost:
            self.workers.broken = True
            raise WorkerLost(f"a rollout worker was lost past {RETRIES} restarts: {lost}") from lost
        except ray.exceptions.RayTaskError as failed:
            if out_of_memory(failed):
                self.workers.broken = True
                raise WorkerFailed(f"a rollout worker ran out of memory: {failed.cause}; {PLAN_HINT}") from None
            raise
        return answers  # type: ignore[return-value]
