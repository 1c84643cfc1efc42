"""The Prefect options every stage shares, in one place.

Stages are idempotent on (run, generation), so Prefect may retry them; GPU-bound stages carry the `gpu`
tag so a concurrency limit on that tag keeps them from oversubscribing a GPU worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

GPU_TAG = "gpu"


def stage(name: str, *, gpu: bool = False) -> Callable[[Callable[..., Any]], Any]:
    return task(name=name, cache_policy=NO_CACHE, tags=["genenv", *([GPU_TAG] if gpu else [])])
