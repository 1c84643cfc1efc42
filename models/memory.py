"""Handing the C heap's free pages back to the system between phases of different shapes."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


def return_freed_memory() -> None:
    """Hand the C heap's free pages back (glibc's malloc_trim; nothing on other C libraries).

    glibc keeps freed pages for reuse, but a phase with other tensor shapes (the next stage, the next micro-batch
    of another length) often cannot reuse them and asks for new ones. Called where a phase ends: after a model
    conversion, a training block, a generation call, and before each GRPO micro-batch (README, Speed: memory).
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    return getattr(ctypes.CDLL(None), "malloc_trim", None)
