"""What a failed worker call means for the stage: retry it on new workers, or fail once and say why.

Prefect retries a stage only on a transient error (pipeline/options.py reads `transient`). A lost actor or node is
transient: the retry starts new workers. An out-of-memory error, or an error every rank raises alike (a bug, a bad
row), would recur on every retry, each one starting and loading all the workers again: it fails the stage at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

OUT_OF_MEMORY_SIGNS = ("out of memory", "can't allocate memory", "cannot allocate memory")
"""CUDA's allocator says "CUDA out of memory"; the CPU allocator "DefaultCPUAllocator: can't allocate memory"."""
PLAN_HINT = "`genenv plan --config CONFIG --gpu-memory GB` shows the per-GPU peak of each phase"


class WorkerLost(RuntimeError):
    """A worker or its node was lost mid-call. Transient: Prefect retries the stage, whose runtime drops the broken
    workers and starts new ones."""

    transient = True


class WorkerFailed(RuntimeError):
    """A failure that would recur on a retry (out of memory, or the same error on every rank): not retried."""

    transient = False


def out_of_memory(error: BaseException) -> bool:
    """An allocator that could not allocate, on a GPU or on the host, anywhere in the error's chain of causes (Ray
    wraps a worker's error, its OutOfMemoryError names a worker its memory monitor killed)."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, torch.OutOfMemoryError) or type(cause).__name__ == "OutOfMemoryError":
            return True
        if any(sign in str(cause).lower() for sign in OUT_OF_MEMORY_SIGNS):
            return True
        cause = cause.__cause__ or getattr(cause, "cause", None)
    return False


def peer_gone(error: BaseException) -> bool:
    """A rank that failed only because a peer left the collective (gloo: "Connection closed by peer"; NCCL: an
    aborted communicator): a consequence, not a cause."""
    cause = getattr(error, "cause", None) or error
    return isinstance(cause, torch.distributed.DistError)


def classified(what: str, errors: Sequence[BaseException | None], lost: Sequence[bool]) -> RuntimeError:
    """The stage's error for a call on len(errors) ranks: errors[i] is rank i's (None: it succeeded), lost[i] whether
    rank i's actor died. Out of memory anywhere, or one error on every rank: WorkerFailed; else WorkerLost."""
    failed = [(rank, e) for rank, e in enumerate(errors) if e is not None]
    for rank, error in failed:
        if out_of_memory(error):
            return WorkerFailed(f"{what} ran out of memory on rank {rank}: {_cause(error)}; {PLAN_HINT}")
    own = [e for _, e in failed if not peer_gone(e)]
    causes = {_cause(e) for e in own}
    if len(own) == len(errors) and not any(lost) and len(causes) == 1:
        return WorkerFailed(f"{what} failed the same way on all {len(errors)} ranks: {causes.pop()}")
    return WorkerLost(f"{what} on {len(errors)} workers was lost: {'; '.join(sorted(causes)) or 'a peer left'}")


def _cause(error: BaseException) -> str:
    """The worker's own error, without Ray's wrapping traceback: 'Type: message'."""
    cause = getattr(error, "cause", None) or error
    return f"{type(cause).__name__}: {str(cause).strip().splitlines()[0] if str(cause).strip() else ''}"
