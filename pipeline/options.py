"""The Prefect options every stage shares, in one place.

Stages are idempotent on (run, generation): each finds its outputs in the warehouse and skips, so a
Prefect retry of a task, or of a whole failed flow run, resumes where it stopped. The warehouse is the
stages' persisted result; Prefect result persistence would be a second copy that could disagree with it
(forks, vacuum), so stages keep NO_CACHE and return small dicts only.

Retries are for transient I/O only (a dropped connection, a timeout, a concurrent Delta commit); a bug, a
bad config or a missing file fails at once instead of three times.

Task runs carry no tags but one: on a machine with a GPU, GPU-bound stages carry `gpu`, and a tag concurrency limit
on it (created by `genenv stack up`) keeps them from oversubscribing the GPU. A tagged task run asks the server for
concurrency slots before it starts, and on Prefect's SQLite server that request races the server's own event writes
("database is locked", retried after about 2 s); so the run's searchable tags (`run:`, `arm:`, `domain:`) go on
the flow runs, where the UI filters, and `stage_tags()` keeps them off the stages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import torch
from deltalake.exceptions import CommitFailedError
from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import TaskRun
from prefect.context import TagsContext
from prefect.states import State

GPU_TAG = "gpu"
RETRIES = 2
RETRY_DELAYS_SECONDS: list[float] = [5, 30]

_TRANSIENT = (ConnectionError, TimeoutError, CommitFailedError, OSError)
_PERMANENT_OS_ERRORS = (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError)


def is_transient(exc: BaseException) -> bool:
    """Network, timeout and Delta commit-conflict errors; OSErrors that name a wrong path are not.

    An exception may also declare itself transient with a true `transient` attribute (the warehouse's
    errors wrap storage failures, so only it knows an unreachable endpoint from refused credentials).
    """
    if getattr(exc, "transient", False) is True:
        return True
    return isinstance(exc, _TRANSIENT) and not isinstance(exc, _PERMANENT_OS_ERRORS)


def retry_on_transient_io(task_: Any, task_run: TaskRun, state: State) -> bool:
    """Prefect's retry_condition_fn: retry only when the stage failed with a transient I/O error."""
    exc = state.result(raise_on_failure=False)
    return isinstance(exc, BaseException) and is_transient(exc)


@cache
def gpu_present() -> bool:
    return torch.cuda.is_available()


@contextmanager
def stage_tags() -> Iterator[None]:
    """Stages started inside carry only their own tags, not the enclosing flow run's `tags(...)`."""
    with TagsContext(current_tags=set()):
        yield


def stage(name: str, *, gpu: bool = False) -> Callable[[Callable[..., Any]], Any]:
    return task(
        name=name,
        cache_policy=NO_CACHE,
        tags=[GPU_TAG] if gpu and gpu_present() else [],
        retries=RETRIES,
        retry_delay_seconds=RETRY_DELAYS_SECONDS,
        retry_condition_fn=retry_on_transient_io,
    )
