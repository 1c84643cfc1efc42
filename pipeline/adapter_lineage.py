"""Which adapters a generation starts from, holds its KL against, and publishes: the lineage of a run's checkpoints
in the warehouse, one generation to the next."""

from __future__ import annotations

import tempfile
from pathlib import Path

from genenv.models.policy import ROLES
from genenv.pipeline.context import GenerationRef
from genenv.pipeline.contract import Adapters
from genenv.runtime.checkpoints import NO_CHECKPOINTS, Checkpoints
from genenv.runtime.interface import Trainee
from genenv.warehouse.checkpoints import checkpoint_uri, publish_adapter


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


def own_checkpoints(ref: GenerationRef) -> tuple[str, str]:
    """Where this generation publishes (and later finds) its trained adapters: under the warehouse root."""
    agent, simulator = (checkpoint_uri(ref.warehouse_uri, ref.run_id, ref.generation, role) for role in ROLES)
    return agent, simulator


def own_adapters(ref: GenerationRef, counts: dict | None = None) -> Adapters:
    """This generation's trained adapters as the stage output that hands them on."""
    agent, simulator = own_checkpoints(ref)
    return Adapters(ref, counts or {}, agent=agent, simulator=simulator)


def save_policy(ref: GenerationRef, policy: Trainee) -> Checkpoints:
    """Save both adapters locally, then publish them to the warehouse root (a folder or S3)."""
    return publish_policy(ref, policy, own_checkpoints(ref))


def publish_policy(ref: GenerationRef, policy: Trainee, checkpoints: tuple[str, str]) -> Checkpoints:
    """Save both adapters (each with its optimizer state, if it keeps one) and publish them at `checkpoints`."""
    scratch = Path(ref.config.data_dir).resolve() / "cache"
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as staging:
        for role, uri in zip(ROLES, checkpoints, strict=True):
            policy.save_adapter(role, Path(staging) / role)
            publish_adapter(Path(staging) / role, uri)
    ref.runtime.saved(checkpoints)
    return checkpoints
