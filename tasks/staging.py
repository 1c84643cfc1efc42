"""Hand-off files between stages that are not tables: rollouts wait here for their verdicts.

Written atomically (temp file + rename) under <warehouse>/_staging/<run>/g<g>/, so a stage either finds
a complete file or none. Readers of the warehouse never see them.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from tasks.context import GenerationRef


def staging_path(ref: GenerationRef, name: str) -> Path:
    return Path(ref.warehouse_uri) / "_staging" / ref.run_id / f"g{ref.generation}" / f"{name}.parquet"


def write_staged(ref: GenerationRef, name: str, data: pl.DataFrame) -> Path:
    path = staging_path(ref, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    data.write_parquet(partial)
    os.replace(partial, path)
    return path


def read_staged(ref: GenerationRef, name: str) -> pl.DataFrame | None:
    path = staging_path(ref, name)
    return pl.read_parquet(path) if path.exists() else None
