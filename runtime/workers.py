"""A Ray rollout worker: one actor's policy, generating with it and training it as one rank of a data-parallel
update.

Each worker loads the policy once (the base model, and both adapters from their published folders: the warehouse
root, a folder or S3) and moves it between checkpoints by swapping adapters (slot.py). With `backend: vllm` it also
starts a vLLM engine on its first call that generates and keeps it, serving each policy it holds (its adapter
folders, or its merged weights), keyed by the weights version. The engine sleeps before the trainer's copy loads or
trains, and wakes for the next call that generates. A shard samples with the random streams its rows have in the
whole call (`first_row`), so the answers are the in-process ones: greedy always, sampled ones for the same seed
whatever the number of workers (in float32; bfloat16 rounds a different batch differently, as in-process batching
does).

For one update the workers join a process group of their own (gloo on CPU, NCCL on GPU; vLLM holds torch's default
one), each computes its share of every step's rows, and all take the same step (models/data_parallel.py). A worker
keeps its trained copy for the stage's next update (the replay after GRPO, the simulator's update), and rank 0 saves
the stage's adapters on request (`adapter_files`): the flow's process holds no model.
"""

from __future__ import annotations

import socket
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genenv.config import GenEnvConfig, Placement
from genenv.faults import crash_point
from genenv.models.backends import BACKENDS
from genenv.models.data_parallel import joined
from genenv.models.loading import resolve_base_model
from genenv.models.memory_plan import PlanSettings
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.sampling import Completion, GenerationBackend, SamplingSettings
from genenv.runtime.checkpoints import Checkpoints, adapter_cache, local_adapters
from genenv.runtime.device_plan import planned_checkpointing
from genenv.runtime.interface import TrainingKey, Update
from genenv.runtime.slot import PolicySlot, PolicySpec

if TYPE_CHECKING:
    from genenv.models.vllm import VllmEngine

COLLECTIVE_SECONDS = 600
"""How long a rank waits in a collective (a gradient sum) for its peers before the update fails."""


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
    plan: PlanSettings
    """The memory plan's inputs: on a GPU the worker plans for its device (runtime/device_plan.py)."""

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
            PlanSettings.of(config),
        )

    def spec(self) -> PolicySpec:
        return PolicySpec(resolve_base_model(self.model, Path(self.models_dir)), self.lora, self.seed, self.precision)


class GenerationWorker:
    """One Ray actor's models: a policy, with both roles' adapters as of what it was last asked for, and with
    `backend: vllm` an engine beside it."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        self.slot = PolicySlot()
        self.serving: tuple[Checkpoints, int] | None = None
        self.backend: GenerationBackend | None = None
        self.engine: VllmEngine | None = None
        """With `backend: vllm`: this worker's engine, started by its first call, kept while the worker lives."""
        self.engine_awake = False
        self.trainer_key: tuple[TrainingKey, int] | None = None
        """While the policy holds a stage's updates: where they started, how many it has taken."""
        self.events: list[str] = []
        """What this worker did to its device, in order ('load', 'swap', 'sleep', 'train'): read by the tests."""

    def ready(self) -> bool:
        return True

    def history(self) -> list[str]:
        return self.events

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
            self.backend = self._backend(self._policy(checkpoints, None), checkpoints)
            self.serving = (checkpoints, version)
        answers = self.backend.generate(role, conversations, sampling, first_row=first_row)
        self.engine_awake = self.engine is not None
        crash_point("worker:answered")  # a worker dying with its shard's answers computed, not yet returned
        return answers

    def _policy(self, checkpoints: Checkpoints, references: Checkpoints | None) -> PolicyPair:
        """The policy as of `checkpoints` (KL references: `references`, None for any); the engine sleeps first when
        that takes a new copy of the base model."""
        spec = self.settings.spec()
        if self.slot.needs_load(spec):
            self._sleep()
        loads, swaps = self.slot.loads, self.slot.swaps
        policy = self.slot.as_of(spec, checkpoints, references, Path(self.settings.cache_dir))
        self.events += ["load"] * (self.slot.loads - loads) + ["swap"] * (self.slot.swaps - swaps)
        if (loads, swaps) != (self.slot.loads, self.slot.swaps):
            self.trainer_key = None  # the policy no longer holds the stage's updates
        return policy

    def _sleep(self) -> None:
        """The engine, if it generated since it last slept, gives its memory back for the trainer (a no-op on CPU)."""
        if self.engine is not None and self.engine_awake:
            self.engine.sleep()
            self.engine_awake = False
            self.events.append("sleep")

    def _backend(self, policy: PolicyPair, checkpoints: Checkpoints) -> GenerationBackend:
        """The configured backend over `policy`; a vLLM one on this worker's engine, serving `checkpoints`."""
        s = self.settings
        if s.backend != "vllm":
            return BACKENDS[s.backend](policy, batch_size=s.batch_size)
        from genenv.models.vllm import EngineSettings, VllmEngine

        if self.engine is None:
            self.engine = VllmEngine(
                EngineSettings(
                    model=str(s.spec().base),
                    dtype=s.precision,
                    adapters=s.vllm_adapters,
                    lora_rank=s.lora.r,
                    gpu_memory_utilization=s.placement.vllm_gpu_memory_utilization,
                )
            )
        adapters = local_adapters(checkpoints, Path(s.cache_dir))
        return BACKENDS[s.backend](
            policy, batch_size=s.batch_size, engine=self.engine, adapters=adapters, version=self.slot.version
        )

    def _trainer(self, rank: int, start: TrainingKey, done: int) -> PolicyPair:
        """The policy as of `start` after the stage's `done` earlier updates: this worker's trained copy, or, before
        the stage's first update, the start's checkpoints (the engine asleep first)."""
        self._sleep()
        if self.trainer_key is None or self.trainer_key[0] != start:
            if done:
                raise RuntimeError(f"rank {rank} restarted after {done} updates of this stage: its copy is lost")
            checkpoints, references, _ = start
            s = self.settings
            checkpointing = planned_checkpointing(s.plan, s.model, s.spec().base)  # before a load
            self._policy(checkpoints, references).checkpoint_activations = checkpointing
            self.slot.trained()
            self.backend = self.serving = None
            self.trainer_key = (start, 0)
        if self.trainer_key[1] != done:
            raise RuntimeError(f"rank {rank} holds {self.trainer_key[1]} of the stage's {done} earlier updates")
        return self.slot.held

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
    ) -> tuple[list[dict], int] | None:
        """Rank `rank` of one data-parallel update of `role` on the policy as of `start`, after the `done` updates
        the stage made on it before; rank 0 returns (records, progress counted), the others None."""
        trainer = self._trainer(rank, start, done)
        self.events.append("train")
        counted: list[int] = []
        try:
            with joined(meeting, rank, world, trainer.device, timedelta(seconds=COLLECTIVE_SECONDS)):
                records = update(trainer, role, rows, progress=counted.append, **settings)
            self.trainer_key = (start, done + 1)
        except BaseException:
            self.trainer_key = None  # half an update: never the start of the next
            raise
        return (records, sum(counted)) if rank == 0 else None

    def adapter_files(self, start: TrainingKey, done: int, role: str) -> dict[str, bytes]:
        """`role`'s adapter (and AdamW state) as `PolicyPair.save_adapter` writes it, file name -> content, of the
        policy as of `start` after the stage's `done` updates: a few MB even for a 7B model's LoRA."""
        trainer = self._trainer(0, start, done)
        with tempfile.TemporaryDirectory() as scratch:
            trainer.save_adapter(role, Path(scratch) / role)
            return {path.name: path.read_bytes() for path in (Path(scratch) / role).iterdir()}
