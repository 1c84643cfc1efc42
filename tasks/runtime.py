"""The models of a flow run: loaded once, reused across its stages and generations, released when it ends.

The outermost flow opens `model_runtime()`; stages (Prefect tasks run in the flow's thread) find it with
`current_runtime()`, and nested flows (a generation inside `evolve`, arms inside `compare`) reuse it. Stages ask
for the policy "as of" a set of checkpoints: if the in-memory adapters came from exactly those they are reused,
otherwise loaded. A stage that trains marks the policy dirty first, so a crash mid-update never lets a later stage
reuse half-trained weights.

With `backend: vllm` the runtime also holds the run's one vLLM engine (models/vllm.py): started by the first stage
that generates, told which adapters to serve at each stage, put to sleep while a stage trains (on a GPU), and shut
down with the runtime. A version number, bumped whenever the in-memory adapters may change, tells the engine when
its merged weights or LoRA ids are stale. With `ray_address` the stages generate on the run's Ray rollout workers
instead (tasks/workers.py), which load the published adapters the same way.
"""

from __future__ import annotations

import gc
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from genenv.config import GenEnvConfig, Placement
from genenv.models.backends import BACKENDS
from genenv.models.loading import resolve_base_model
from genenv.models.policy import ROLES, LoraSettings, PolicyPair
from genenv.models.sampling import GenerationBackend
from genenv.tasks.context import GenerationRef
from genenv.tasks.contract import Adapters
from genenv.tasks.workers import RayBackend, RayWorkers, WorkerSettings, adapter_cache, local_adapters
from genenv.warehouse.checkpoints import checkpoint_uri, publish_adapter

if TYPE_CHECKING:
    from genenv.models.vllm import VllmEngine

Checkpoints = tuple[str | None, str | None]
"""(agent, simulator) adapter folders; None = a fresh adapter (or, for a KL reference, the base model)."""
NO_CHECKPOINTS: Checkpoints = (None, None)


class ModelRuntime:
    def __init__(self, placement: Placement | None = None) -> None:
        self.placement = placement
        """Where generation computes, from the command that opened the runtime; None: each stage's config says."""
        self._policy: PolicyPair | None = None
        self._identity: tuple[str, LoraSettings, int, str, Checkpoints] | None = None
        self._loaded_from: Checkpoints | None = None
        self._version = 0
        self._engine: VllmEngine | None = None
        self._workers: RayWorkers | None = None

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
        return policy

    def saved(self, checkpoints: Checkpoints) -> None:
        self._loaded_from = checkpoints

    def release(self) -> None:
        if self._engine is not None:
            self._engine.close()
        if self._workers is not None:
            self._workers.close()
        self._policy = self._identity = self._loaded_from = self._engine = self._workers = None
        gc.collect()


def _local(config: GenEnvConfig, folders: Checkpoints) -> dict[str, Path | None]:
    return local_adapters(folders, adapter_cache(config))


_CURRENT: ContextVar[ModelRuntime | None] = ContextVar("genenv_model_runtime", default=None)


@contextmanager
def model_runtime(placement: Placement | None = None) -> Iterator[ModelRuntime]:
    """The flow's models: a new runtime, released on exit, unless an enclosing flow already holds one. `placement`:
    the invoking command's (a resumed run's stored config holds where it ran before, not where it runs now)."""
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    runtime = ModelRuntime(placement)
    token = _CURRENT.set(runtime)
    try:
        yield runtime
    finally:
        _CURRENT.reset(token)
        runtime.release()


def current_runtime() -> ModelRuntime:
    runtime = _CURRENT.get()
    if runtime is None:
        raise RuntimeError("a stage that loads models runs inside a flow that holds `model_runtime()`")
    return runtime


def committed_checkpoints(ref: GenerationRef, generation: int) -> Checkpoints:
    """The adapters a committed generation ended with."""
    row = ref.warehouse.read("generations", run_id=ref.run_id, generation=generation)
    if row.is_empty():
        raise RuntimeError(f"run {ref.run_id} has no committed generation {generation} to start from")
    return row["agent_checkpoint"][0], row["simulator_checkpoint"][0]


def reference_checkpoints(ref: GenerationRef) -> Checkpoints:
    """The KL reference of each role: its adapter after the warm start (generation 0), frozen; the base model
    when there was no warm start (then the generation-0 adapters equal the base anyway)."""
    if ref.generation == 0 or not ref.config.warm_start:
        return NO_CHECKPOINTS
    return committed_checkpoints(ref, 0)


def own_checkpoints(ref: GenerationRef) -> Checkpoints:
    """Where this generation publishes (and later finds) its trained adapters: under the warehouse root."""
    agent, simulator = (checkpoint_uri(ref.warehouse_uri, ref.run_id, ref.generation, role) for role in ROLES)
    return agent, simulator


def own_adapters(ref: GenerationRef, counts: dict | None = None) -> Adapters:
    """This generation's trained adapters as the stage output that hands them on."""
    agent, simulator = own_checkpoints(ref)
    return Adapters(ref, counts or {}, agent=agent, simulator=simulator)


def save_policy(ref: GenerationRef, policy: PolicyPair) -> Checkpoints:
    """Save both adapters locally, then publish them to the warehouse root (a folder or S3)."""
    checkpoints = own_checkpoints(ref)
    scratch = Path(ref.config.data_dir).resolve() / "cache"
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as staging:
        for role, uri in zip(ROLES, checkpoints, strict=True):
            policy.save_adapter(role, Path(staging) / role)
            publish_adapter(Path(staging) / role, uri)
    current_runtime().saved(checkpoints)
    return checkpoints
