"""Time and peak resident memory of one call, for the benchmarks that print memory beside speed (Linux)."""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE / 2**20


def measured(run: Callable[[], T]) -> tuple[T, float, float]:
    """(result, seconds, peak extra MB) of `run()`, memory sampled every 3 ms. The C heap's free pages are handed
    back first (glibc's malloc_trim), so an earlier run's leftovers neither hide this run's peak nor inflate it."""
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)
    before = peak = resident_mb()
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, resident_mb())
            time.sleep(0.003)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    return result, seconds, peak - before
