"""`backend: vllm` in the flow's process: one vLLM engine per flow run beside the trainer, sharing its device.

The engine starts with the first stage that generates and serves every later one; it is told which adapters to
serve at each stage (the policy's merged weights, or the published adapter folders as LoRA requests), keyed by the
weights version, and shut down with the runtime. On a GPU the two share the device by construction: the engine
sleeps (weights to host memory, KV cache freed) before any trainer copy loads or trains, and wakes, once PyTorch's
cached blocks went back to the device, for the next stage that generates (models/vllm.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from genenv.config import GenEnvConfig, Placement
from genenv.models.backends import BACKENDS
from genenv.models.loading import resolve_base_model
from genenv.models.policy import PolicyPair
from genenv.models.sampling import GenerationBackend
from genenv.runtime.checkpoints import NO_CHECKPOINTS, Checkpoints, adapter_cache, local_adapters
from genenv.runtime.in_process import InProcessRuntime, policy_spec

if TYPE_CHECKING:
    from genenv.models.vllm import VllmEngine


class VllmRuntime(InProcessRuntime):
    """The in-process runtime with the run's vLLM engine beside its policy."""

    def __init__(self, placement: Placement | None = None) -> None:
        super().__init__(placement)
        self.engine: VllmEngine | None = None

    def policy(self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints) -> PolicyPair:
        if self.engine is not None and self.slot.needs_load(policy_spec(config)):
            self.engine.sleep()  # room for a new copy of the base model
        return super().policy(config, checkpoints, references)

    def backend(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> GenerationBackend:
        policy = self.policy(config, checkpoints, references)
        adapters = local_adapters(checkpoints, adapter_cache(config))  # after an update: where it was saved to
        return BACKENDS["vllm"](
            policy,
            batch_size=config.generation_batch_size,
            engine=self._engine(config),
            adapters=adapters,
            version=self.slot.version,
        )

    def training(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> PolicyPair:
        if self.engine is not None:
            self.engine.sleep()  # before the trainer's copy loads, swaps or trains
        return super().training(config, checkpoints, references)

    def _engine(self, config: GenEnvConfig) -> VllmEngine:
        """The run's engine, started on first use; restarted only if a stage asks for other settings."""
        from genenv.models.vllm import EngineSettings, VllmEngine

        settings = EngineSettings(
            model=str(resolve_base_model(config.model, config.models_dir)),
            dtype=config.precision,
            adapters=config.vllm_adapters,
            lora_rank=config.lora_r,
            gpu_memory_utilization=(self.placement or config.placement).vllm_gpu_memory_utilization,
        )
        if self.engine is not None and self.engine.settings != settings:
            self.engine.close()
            self.engine = None
        if self.engine is None:
            self.engine = VllmEngine(settings)
        return self.engine

    def release(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None
        super().release()
