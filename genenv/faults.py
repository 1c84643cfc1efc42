"""Named crash points for fault-injection tests.

`GENENV_CRASH_AT=<point>` makes the process kill itself with SIGKILL when it reaches that point, the
harshest way a worker can die (no cleanup, no exception handlers). Unset, a crash point does nothing. With
`GENENV_CRASH_MARKER=<file>` as well, only the first process to reach it dies (it creates the file), so a worker
that is restarted, with the same environment, gets past it.

`GENENV_STALL_AT=<point>` holds the thread that reaches the point for STALL_SECONDS in one call that stop signals do
not interrupt, as a training step's backward pass (one call into PyTorch, a minute on a loaded CPU) holds the main
thread: the signals reach the process's other threads, and Python runs no handler in this one. With
`GENENV_STALL_MARKER=<file>`, the file is created when the stall begins.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

STALL_SECONDS = 600


def crash_point(name: str) -> None:
    if os.environ.get("GENENV_CRASH_AT") == name and _first_to_reach():
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get("GENENV_STALL_AT") == name:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        if os.environ.get("GENENV_STALL_MARKER"):
            Path(os.environ["GENENV_STALL_MARKER"]).touch()
        time.sleep(STALL_SECONDS)


def _first_to_reach() -> bool:
    marker = os.environ.get("GENENV_CRASH_MARKER")
    if not marker:
        return True
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True
