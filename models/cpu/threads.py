"""Intra-op threads that fit the machine as it is now, not as it was when the process started.

PyTorch runs each parallel region on one thread per core, and its threads spin at the end of a region until the last
one arrives. When another process holds a core, the thread that shares it arrives late at every region: the fixed
work of bench/contention.py took more than 4.6x as long beside one busy core, where one thread fewer costs about what
that core is worth (docs/performance.md, "Beside a busy core"). So on the CPU the count follows the machine: every
forward pass asks `ThreadGovernor`, which at most once a window reads how long runnable tasks waited for a CPU and
the idle time, and takes a thread away while tasks wait or gives one back while a core sits idle. It reads the wait
twice: the machine's (the kernel's CPU pressure, the share of time some task waited) and the process's own (its
threads' scheduler wait). A model of small parallel regions, such as the label checks' sentence encoder, keeps the
machine's share near half a window while its own threads wait at nearly every region (a thread-second a second,
traced beside a busy core): the machine's reading alone left it at 2 threads for up to 54 s.

Linux only (/proc/pressure/cpu: kernel 4.20+ with PSI); elsewhere, and where OMP_NUM_THREADS is set (the user's
choice wins), PyTorch's count stays. The count changed no logit and no gradient bit of the embedded model in float32
on the host it was measured on (docs/performance.md); it is not part of a run's config for that reason."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch

PRESSURE = Path("/proc/pressure/cpu")
STAT = Path("/proc/stat")
OWN_THREADS = Path("/proc/self/task")
WINDOW_S = 0.5
"""Seconds between two looks at the machine: a collapse beside a new neighbour lasts about this long."""
CONTENDED = 0.5
"""Share of a window in which some runnable task waited for a CPU that takes a thread away."""
IDLE_CORE = 0.8
"""Cores idle over a window that give a thread back (one thread's worth, less the process's own housekeeping)."""
TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Reading:
    """The machine's cumulative counters, and this process's own wait, at one moment."""

    at: float
    """time.monotonic() seconds."""
    waited_us: int
    """Microseconds some runnable task has waited for a CPU since boot (PSI's cpu "some" total)."""
    idle_ticks: int
    """Clock ticks all CPUs have been idle since boot (/proc/stat's idle and iowait)."""
    own_waited_ns: int
    """Nanoseconds this process's live threads have been runnable but waiting for a CPU (each one's schedstat
    run_delay; 0 where the kernel keeps no schedstat)."""


def read_machine() -> Reading | None:
    """The counters now (the machine's and the process's), or None where the kernel does not report CPU pressure."""
    try:
        some = PRESSURE.read_text().splitlines()[0].split()
        cpu = STAT.read_text().split("\n", 1)[0].split()
    except (OSError, IndexError):
        return None
    waited = dict(part.split("=") for part in some[1:])["total"]
    return Reading(time.monotonic(), int(waited), int(cpu[4]) + int(cpu[5]), own_waited_ns())


def own_waited_ns() -> int:
    """The run_delay of this process's threads, summed (a thread that ended between listing and reading counts 0:
    the governor looks at the difference of two sums, so its share drops out of one window at most)."""
    total = 0
    for thread in OWN_THREADS.glob("*/schedstat"):
        try:
            total += int(thread.read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total


def next_threads(threads: int, ceiling: int, waited_share: float, idle_cores: float) -> int:
    """One thread fewer while tasks wait for a CPU, one more (up to `ceiling`) while a core sits idle."""
    if waited_share >= CONTENDED and threads > 1:
        return threads - 1
    if idle_cores >= IDLE_CORE and threads < ceiling:
        return threads + 1
    return threads


class ThreadGovernor:
    """Sets torch's intra-op thread count from the machine's state; called before each forward pass (cheap: it
    reads the counters only once `window_s` has passed). Call it from the thread that runs the model: OpenMP's
    count belongs to the calling thread."""

    def __init__(self, ceiling: int, window_s: float = WINDOW_S, read: Callable[[], Reading | None] = read_machine):
        self.ceiling = ceiling
        self.window_s = window_s
        self.read = read
        self.last = read()
        self.changes = 0
        """Times the count changed: the bench and the logs say how often the machine moved."""

    @property
    def available(self) -> bool:
        return self.last is not None

    def __call__(self, *_: object) -> None:
        if self.last is None or time.monotonic() - self.last.at < self.window_s:
            return
        now = self.read()
        if now is None:
            return
        seconds = now.at - self.last.at
        machine_waited = (now.waited_us - self.last.waited_us) / 1e6 / seconds
        own_waited = (now.own_waited_ns - self.last.own_waited_ns) / 1e9 / seconds
        waited = max(machine_waited, own_waited)
        idle = (now.idle_ticks - self.last.idle_ticks) / TICKS_PER_S / seconds
        self.last = now
        threads = torch.get_num_threads()
        wanted = next_threads(threads, self.ceiling, waited, idle)
        if wanted != threads:
            torch.set_num_threads(wanted)
            self.changes += 1


@cache
def process_governor() -> ThreadGovernor:
    """One governor a process, its ceiling PyTorch's count before any governor changed it: every model loaded
    after the first shares it, so a model loaded while the count was down can still bring it back up."""
    return ThreadGovernor(torch.get_num_threads())


def fit_threads_to_machine(embeddings: torch.nn.Module) -> ThreadGovernor | None:
    """Let a model's forward passes on the CPU adjust the thread count (a pre-hook on its input `embeddings`, which
    every forward pass computes once), unless OMP_NUM_THREADS fixes it or the machine does not report pressure."""
    if "OMP_NUM_THREADS" in os.environ or next(embeddings.parameters()).device.type != "cpu":
        return None
    governor = process_governor()
    if not governor.available:
        return None
    embeddings.register_forward_pre_hook(governor)
    return governor
