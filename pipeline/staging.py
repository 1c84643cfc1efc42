"""Hand-off files between stages that are not tables: rollouts wait here for their verdicts.

Stored under <warehouse>/_staging/<run>/g<g>/ on a local folder or on S3, so a stage either finds a
complete file or none: locally written to a temporary name and renamed, on S3 one PUT (objects appear
whole). Readers of the warehouse never see them.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from genenv.atomic import atomic_path
from genenv.pipeline.context import GenerationRef
from genenv.warehouse.storage import filesystem, is_remote, join, translated


def staging_path(ref: GenerationRef, name: str) -> str:
    """The staged file's URI (an absolute path for a local warehouse)."""
    return join(ref.warehouse_uri, "_staging", ref.run_id, f"g{ref.generation}", f"{name}.parquet")


def write_staged(ref: GenerationRef, name: str, data: pl.DataFrame) -> str:
    uri = staging_path(ref, name)
    fs, path = filesystem(uri)
    with translated(uri):
        if is_remote(uri):
            with fs.open(path, "wb") as handle:
                data.write_parquet(handle)
            return uri
        with atomic_path(Path(path)) as partial:
            data.write_parquet(partial)
    return uri


def read_staged(uri: str) -> pl.DataFrame | None:
    """The staged file at `uri` (a `staging_path`), or None when no complete file is there."""
    fs, path = filesystem(uri)
    with translated(uri):
        if not fs.exists(path):
            return None
        with fs.open(path, "rb") as handle:
            return pl.read_parquet(handle)
