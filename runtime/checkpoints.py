"""A pair of published adapter checkpoints (agent, simulator), and where remote ones are fetched to."""

from __future__ import annotations

from pathlib import Path

from genenv.config import GenEnvConfig
from genenv.models.policy import ROLES
from genenv.warehouse.checkpoints import fetch_adapter

Checkpoints = tuple[str | None, str | None]
"""Each role's published adapter (a folder or an s3:// URI); None: a fresh adapter, equal to the base model."""
NO_CHECKPOINTS: Checkpoints = (None, None)


def adapter_cache(config: GenEnvConfig) -> Path:
    """Where remote adapters are downloaded to, under the data folder."""
    return Path(config.data_dir).resolve() / "cache" / "checkpoints"


def local_adapters(folders: Checkpoints, cache: Path) -> dict[str, Path | None]:
    """Each role's adapter as a local folder (a download cached under `cache` when it is remote); None: fresh."""
    return {role: fetch_adapter(c, cache) if c else None for role, c in zip(ROLES, folders, strict=True)}
