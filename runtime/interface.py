"""The one interface the stages see, whichever way the models run (handle.py picks the runtime behind it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from transformers import PreTrainedTokenizerBase

from genenv.config import GenEnvConfig
from genenv.models.sampling import GenerationBackend
from genenv.runtime.checkpoints import NO_CHECKPOINTS, Checkpoints

Update = Callable[..., list[dict]]
"""A training update, `update(policy, role, rows, **settings) -> step records`: `grpo_update` or `weighted_sft`."""
TrainingKey = tuple[Checkpoints, Checkpoints, int]
"""(adapters, KL references, the runtime's weights version) a stage's updates start from."""


class Trainee(Protocol):
    """What a stage that trains holds between `Runtime.training` and saving: the tokenizer its rows are encoded
    with, and the adapters to save once its updates are done. A `PolicyPair` in this process; on Ray, a handle on
    the copy the workers train."""

    tokenizer: PreTrainedTokenizerBase

    def save_adapter(self, role: str, folder: Path) -> None: ...


TraineeT = TypeVar("TraineeT", bound=Trainee)
"""The trainee a runtime hands out and takes back: a `PolicyPair` in this process, a `RemotePolicy` on Ray."""


class Runtime(Protocol[TraineeT]):
    """The models of a flow run, as the stages use them."""

    def backend(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> GenerationBackend:
        """A backend that generates with `checkpoints` as adapters."""
        ...

    def training(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> TraineeT:
        """The policy as of `checkpoints` (KL references: `references`), to update in place through `fit`; it matches
        no checkpoint until `saved`."""
        ...

    def fit(self, policy: TraineeT, update: Update, role: str, rows: list, **settings: Any) -> list[dict]:
        """`update(policy, role, rows, **settings)` on the policy `training` returned."""
        ...

    def saved(self, checkpoints: Checkpoints) -> None:
        """The trained policy was saved and published as `checkpoints`."""
        ...

    def release(self) -> None:
        """Let go of every model, engine and worker."""
        ...
