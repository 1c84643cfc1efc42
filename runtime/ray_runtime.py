"""`ray_address`: the stages generate and train on the run's Ray workers (pool.py), and the flow's process holds no
model. A stage that trains gets a `RemotePolicy`: the tokenizer to encode its rows, and rank 0's adapters, saved here
when the stage publishes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transformers import PreTrainedTokenizerBase

from genenv.atomic import atomic_path
from genenv.config import GenEnvConfig, Placement
from genenv.models.loading import make_readable, resolve_base_model
from genenv.models.policy import load_tokenizer
from genenv.runtime.checkpoints import NO_CHECKPOINTS, Checkpoints
from genenv.runtime.interface import TrainingKey, Update
from genenv.runtime.pool import RayBackend, RayWorkers
from genenv.runtime.workers import WorkerSettings


class RemotePolicy:
    """The flow's side of the policy the workers train: its tokenizer, and its adapters, fetched from rank 0 when a
    stage saves them."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, runtime: RayRuntime) -> None:
        self.tokenizer = tokenizer
        self.runtime = runtime

    def save_adapter(self, role: str, folder: Path) -> None:
        """As `PolicyPair.save_adapter`: the folder replaced atomically, readable by the other workers."""
        files = self.runtime.adapter_files(role)
        with atomic_path(Path(folder)) as staging:
            staging.mkdir()
            for name, content in files.items():
                (staging / name).write_bytes(content)
            make_readable(staging)


class RayRuntime:
    """The workers, started by the first stage that needs them; new ones when a stage asks for other settings or
    when one died past its restarts (a retry of the failed stage then runs on new workers)."""

    def __init__(self, placement: Placement | None = None) -> None:
        self.placement = placement
        self.workers: RayWorkers | None = None
        self.version = 0
        """Bumped by every stage that trains: the workers' engines never serve what they cached before."""
        self.ranks: tuple[WorkerSettings, TrainingKey, int] | None = None
        """The training stage's workers, where its updates started, how many ran."""
        self._tokenizer: tuple[Path, PreTrainedTokenizerBase] | None = None

    def _settings(self, config: GenEnvConfig) -> WorkerSettings:
        return WorkerSettings.of(config, self.placement or config.placement)

    def _workers(self, settings: WorkerSettings) -> RayWorkers:
        if self.workers is not None and (self.workers.settings != settings or self.workers.broken):
            self.workers.close()
            self.workers = None
        if self.workers is None:
            self.workers = RayWorkers(settings)
        return self.workers

    def backend(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> RayBackend:
        return RayBackend(self._workers(self._settings(config)), checkpoints, self.version)

    def training(
        self, config: GenEnvConfig, checkpoints: Checkpoints, references: Checkpoints = NO_CHECKPOINTS
    ) -> RemotePolicy:
        self.version += 1
        self.ranks = (self._settings(config), (checkpoints, references, self.version), 0)
        return RemotePolicy(self.tokenizer(config), self)

    def tokenizer(self, config: GenEnvConfig) -> PreTrainedTokenizerBase:
        """The base model's tokenizer, the only part of it this process reads."""
        base = resolve_base_model(config.model, config.models_dir)
        if self._tokenizer is None or self._tokenizer[0] != base:
            self._tokenizer = (base, load_tokenizer(base))
        return self._tokenizer[1]

    def fit(self, policy: RemotePolicy, update: Update, role: str, rows: list, **settings: Any) -> list[dict]:
        """The update data parallel on the workers, one rank each (RayWorkers.fit)."""
        worker_settings, start, done = self._training_stage()
        records = self._workers(worker_settings).fit(start, done, update, role, rows, **settings)
        self.ranks = (worker_settings, start, done + 1)
        return records

    def adapter_files(self, role: str) -> dict[str, bytes]:
        worker_settings, start, done = self._training_stage()
        return self._workers(worker_settings).adapter_files(start, done, role)

    def _training_stage(self) -> tuple[WorkerSettings, TrainingKey, int]:
        if self.ranks is None:
            raise RuntimeError("no stage is training: call training() first")
        return self.ranks

    def saved(self, checkpoints: Checkpoints) -> None:
        """Nothing to do here: the workers move to the published adapters when a stage asks for them."""

    def release(self) -> None:
        if self.workers is not None:
            self.workers.close()
        self.workers = self.ranks = self._tokenizer = None
