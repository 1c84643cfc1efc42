"""Resident memory for the benchmarks that print it beside speed (Linux): a sampler, and one call measured."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from genenv.models.memory import return_freed_memory

T = TypeVar("T")
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


class RssSampler(threading.Thread):
    """Samples the process's resident memory every `every` seconds, with the time of each sample."""

    def __init__(self, every: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.every, self.samples, self.stopped = every, [], threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.samples.append((time.time(), rss_bytes()))
            time.sleep(self.every)

    def peak(self, start: float, end: float) -> int:
        return max((rss for t, rss in self.samples if start <= t <= end), default=0)


def measured(run: Callable[[], T]) -> tuple[T, float, float]:
    """(result, seconds, peak extra MB) of `run()`, memory sampled every 3 ms. The C heap's free pages are handed
    back first, so an earlier run's leftovers neither hide this run's peak nor inflate it."""
    return_freed_memory()
    before = rss_bytes()
    sampler = RssSampler(every=0.003)
    sampler.start()
    started, clock = time.perf_counter(), time.time()
    result = run()
    seconds = time.perf_counter() - started
    sampler.stopped.set()
    sampler.join()
    peak = max(sampler.peak(clock, time.time()), before)
    return result, seconds, (peak - before) / 2**20


def memory_ratio(extra_mb: float, baseline_mb: float) -> str:
    """'1.23x' of the baseline's extra memory, or 'no baseline' where it measured nothing (smoke sizes can)."""
    return f"{extra_mb / baseline_mb:.2f}x" if baseline_mb > 0 else "no baseline"
