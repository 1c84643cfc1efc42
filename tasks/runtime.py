"""The models of a flow run: loaded once, reused across its stages and generations, released when it ends.

The outermost flow opens `model_runtime()` and hands the runtime on as an argument: to nested flows (a generation
inside `evolve`, arms inside `compare`) and, inside the `GenerationRef`, to every stage. Stages ask for the policy
"as of" a set of checkpoints: if the in-memory adapters came from exactly those they are reused, otherwise loaded.
A stage that trains marks the policy dirty first, so a crash mid-update never lets a later stage
reuse half-trained weights.

With `backend: vllm` the runtime also holds the run's one vLLM engine (models/vllm.py): started by the first stage
that generates, told which adapters to serve at each stage, put to sleep while a stage trains (on a GPU), and shut
down with the runtime. A version number, bumped whenever the in-memory adapters may change, tells the engine when
its merged weights or LoRA ids are stale. With `ray_address` the stages generate on the run's Ray rollout workers
instead (tasks/workers.py), which load the published adapters the same way, and train on them as data-parallel ranks
(`fit`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genenv.config import GenEnvConfig, Placement
from genenv.models.backends import BACKENDS
from genenv.models.loading import resolve_base_model
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.sampling import GenerationBackend
from genenv.tasks.workers import (
    NO_CHECKPOINTS,
    Checkpoints,
    RayBackend,
    RayWorkers,
    TrainingKey,
    Update,
    WorkerSettings,
    adapter_cache,
    local_adapters,
)

if TYPE_CHECKING:
    from genenv.models.vllm import VllmEngine


class ModelRuntime:
    """A handle on the models one flow run has loaded. Flows take it as a parameter, and Prefect stores a
    parameter it cannot encode as JSON as its type name; the slots (no `__dict__`) make sure Prefect gives up at
    once instead of walking the loaded tensors."""

    __slots__ = ("placement", "_policy", "_identity", "_loaded_from", "_version", "_engine", "_workers", "_ranks")

    def __init__(self, placement: Placement | None = None) -> None:
        self.placement = placement
        """Where generation computes, from the command that opened the runtime; None: each stage's config says."""
        self._policy: PolicyPair | None = None
        self._identity: tuple[str, LoraSettings, int, str, Checkpoints] | None = None
        self._loaded_from: Checkpoints | None = None
        self._version = 0
        self._engine: VllmEngine | None = None
        self._workers: RayWorkers | None = None
        self._ranks: tuple[WorkerSettings, TrainingKey, int] | None = None
        """With `ray_address`: the workers, where the stage's updates started (set by `training`), how many ran."""

    def policy(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> PolicyPair:
        """The pair with `checkpoints` as adapters and `references` as each role's frozen KL reference."""
        base = resolve_base_model(config.model, config.models_dir)
        lora = LoraSettings.of(config)
        identity = (str(base), lora, config.seed, config.precision, references)
        if self._policy is None or self._identity != identity or self._loaded_from != checkpoints:
            self._policy = PolicyPair.load(
                base,
                lora,
                adapters=_local(config, checkpoints),
                references=_local(config, references),
                seed=config.seed,
                precision=config.precision,
            )
            self._identity, self._loaded_from = identity, checkpoints
            self._version += 1
        self._policy.checkpoint_activations = config.checkpoint_activations  # changes memory and time, not results
        return self._policy

    def backend(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> GenerationBackend:
        placement = self.placement or config.placement
        if placement.ray_address:
            return RayBackend(self._ray_workers(WorkerSettings.of(config, placement)), checkpoints, self._version)
        policy = self.policy(config, checkpoints, references)
        if config.backend != "vllm":
            return BACKENDS[config.backend](policy, batch_size=config.generation_batch_size)
        engine = self._vllm_engine(config)
        adapters = _local(config, checkpoints)  # after an update, the folders it was saved to, not those it loaded
        return BACKENDS[config.backend](
            policy, batch_size=config.generation_batch_size, engine=engine, adapters=adapters, version=self._version
        )

    def _vllm_engine(self, config: GenEnvConfig) -> VllmEngine:
        """The run's engine, started on first use; restarted only if a stage asks for other settings."""
        from genenv.models.vllm import EngineSettings, VllmEngine

        settings = EngineSettings(
            model=str(resolve_base_model(config.model, config.models_dir)),
            dtype=config.precision,
            adapters=config.vllm_adapters,
            lora_rank=config.lora_r,
            gpu_memory_utilization=(self.placement or config.placement).vllm_gpu_memory_utilization,
        )
        if self._engine is not None and self._engine.settings != settings:
            self._engine.close()
            self._engine = None
        if self._engine is None:
            self._engine = VllmEngine(settings)
        return self._engine

    def _ray_workers(self, settings: WorkerSettings) -> RayWorkers:
        """The run's rollout workers, started on first use; new ones if a stage asks for other settings, or if one
        died past its restarts (a retry of the failed stage then runs on new workers)."""
        if self._workers is not None and (self._workers.settings != settings or self._workers.broken):
            self._workers.close()
            self._workers = None
        if self._workers is None:
            self._workers = RayWorkers(settings)
        return self._workers

    def training(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> PolicyPair:
        """The policy to update in place; it no longer matches any checkpoint until `saved`."""
        policy = self.policy(config, checkpoints, references)
        self._loaded_from = None
        self._version += 1
        if self._engine is not None:
            self._engine.sleep()
        placement = self.placement or config.placement
        start = (checkpoints, references, self._version)
        self._ranks = (WorkerSettings.of(config, placement), start, 0) if placement.ray_address else None
        return policy

    def fit(self, policy: PolicyPair, update: Update, role: str, rows: list, **settings: Any) -> list[dict]:
        """`update(policy, role, rows, **settings)` on the policy `training` returned: in this process, or with
        `ray_address` data parallel on the Ray workers, whose result `policy` then holds (tasks/workers.py)."""
        if self._ranks is None:
            return update(policy, role, rows, **settings)
        worker_settings, start, done = self._ranks
        records = self._ray_workers(worker_settings).fit(start, done, policy, update, role, rows, **settings)
        self._ranks = (worker_settings, start, done + 1)
        return records

    def saved(self, checkpoints: Checkpoints) -> None:
        self._loaded_from = checkpoints

    def release(self) -> None:
        if self._engine is not None:
            self._engine.close()
        if self._workers is not None:
            self._workers.close()
        self._policy = self._identity = self._loaded_from = self._engine = self._workers = self._ranks = None
        gc.collect()


def _local(config: GenEnvConfig, folders: Checkpoints) -> dict[str, Path | None]:
    return local_adapters(folders, adapter_cache(config))


@contextmanager
def model_runtime(placement: Placement | None = None, given: ModelRuntime | None = None) -> Iterator[ModelRuntime]:
    """The flow's models: `given` when the calling flow holds them (a generation inside evolve, an arm inside
    compare), else a new runtime, released on exit. `placement`: the invoking command's (a resumed run's stored
    config holds where it ran before, not where it runs now)."""
    if given is not None:
        yield given
        return
    runtime = ModelRuntime(placement)
    try:
        yield runtime
    finally:
        runtime.release()
