"""The models of a flow run: loaded once, reused across its stages and generations, released when it ends.

The outermost flow opens `model_runtime()` and hands the runtime on as an argument: to nested flows (a generation
inside `evolve`, arms inside `compare`) and, inside the `GenerationRef`, to every stage. Each request goes to one of
three runtimes, picked by where the run computes: `RayRuntime` with `ray_address`, else `VllmRuntime` with
`backend: vllm`, else `InProcessRuntime`. A stage that asks for another kind than the one held gets a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from genenv.config import GenEnvConfig, Placement
from genenv.models.sampling import GenerationBackend
from genenv.runtime.checkpoints import NO_CHECKPOINTS, Checkpoints
from genenv.runtime.in_process import InProcessRuntime
from genenv.runtime.interface import Runtime, Trainee, Update
from genenv.runtime.ray_runtime import RayRuntime
from genenv.runtime.vllm_runtime import VllmRuntime


def runtime_kind(config: GenEnvConfig, placement: Placement) -> Callable[[Placement | None], Runtime[Any]]:
    """Which runtime computes for `config`, placed by `placement`."""
    if placement.ray_address:
        return RayRuntime
    return VllmRuntime if config.backend == "vllm" else InProcessRuntime


class ModelRuntime:
    """A handle on the models one flow run has loaded. Flows take it as a parameter, and Prefect stores a
    parameter it cannot encode as JSON as its type name; the slots (no `__dict__`) make sure Prefect gives up at
    once instead of walking the loaded tensors."""

    __slots__ = ("placement", "current")

    def __init__(self, placement: Placement | None = None) -> None:
        self.placement = placement
        """Where generation computes, from the command that opened the runtime; None: each stage's config says."""
        self.current: Runtime[Any] | None = None

    def _for(self, config: GenEnvConfig) -> Runtime[Any]:
        kind = runtime_kind(config, self.placement or config.placement)
        if self.current is None or type(self.current) is not kind:
            self.release()
            self.current = kind(self.placement)
        return self.current

    def backend(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> GenerationBackend:
        return self._for(config).backend(config, checkpoints, references)

    def training(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> Trainee:
        return self._for(config).training(config, checkpoints, references)

    def fit(self, policy: Trainee, update: Update, role: str, rows: list, **settings: Any) -> list[dict]:
        """`update(policy, role, rows, **settings)` on the policy `training` returned, where it lives."""
        if self.current is None:
            raise RuntimeError("no stage is training: call training() first")
        return self.current.fit(policy, update, role, rows, **settings)

    def saved(self, checkpoints: Checkpoints) -> None:
        if self.current is not None:
            self.current.saved(checkpoints)

    def release(self) -> None:
        if self.current is not None:
            self.current.release()
        self.current = None


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
