"""Hand-off files between stages that are not tables: rollouts wait here for their verdicts, and the warm start's
epochs for the next one.

Stored under <warehouse>/_staging/<run>/g<g>/ on a local folder or on S3, so a stage either finds a
complete file or none: locally written to a temporary name and renamed, on S3 one PUT (objects appear
whole). Readers of the warehouse never see them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

import polars as pl

from genenv.atomic import atomic_path
from genenv.pipeline.context import GenerationRef
from genenv.warehouse.storage import filesystem, is_remote, join, translated

T = TypeVar("T")


def staging_path(ref: GenerationRef, name: str, suffix: str = ".parquet") -> str:
    """The staged file's URI (an absolute path for a local warehouse)."""
    return join(ref.warehouse_uri, "_staging", ref.run_id, f"g{ref.generation}", f"{name}{suffix}")


def write_staged(ref: GenerationRef, name: str, data: pl.DataFrame) -> str:
    return _put(staging_path(ref, name), data.write_parquet)


def read_staged(uri: str) -> pl.DataFrame | None:
    """The staged file at `uri` (a `staging_path`), or None when no complete file is there."""
    return _get(uri, pl.read_parquet)


def write_staged_bytes(ref: GenerationRef, name: str, data: bytes) -> str:
    """A staged file of bytes, `name` with its suffix."""
    return _put(staging_path(ref, name, suffix=""), lambda handle: handle.write(data))


def read_staged_bytes(ref: GenerationRef, name: str) -> bytes | None:
    return _get(staging_path(ref, name, suffix=""), lambda handle: handle.read())


def remove_staged(ref: GenerationRef, name: str) -> None:
    """The staged file or folder `name`, gone (nothing there is fine)."""
    uri = staging_path(ref, name, suffix="")
    fs, path = filesystem(uri)
    with translated(uri):
        if fs.exists(path):
            fs.rm(path, recursive=True)


def _put(uri: str, write: Callable[[BinaryIO], object]) -> str:
    fs, path = filesystem(uri)
    with translated(uri):
        if is_remote(uri):
            with fs.open(path, "wb") as handle:
                write(handle)
            return uri
        with atomic_path(Path(path)) as partial, partial.open("wb") as handle:
            write(handle)
    return uri


def _get(uri: str, read: Callable[[BinaryIO], T]) -> T | None:
    fs, path = filesystem(uri)
    with translated(uri):
        if not fs.exists(path):
            return None
        with fs.open(path, "rb") as handle:
            return read(handle)
