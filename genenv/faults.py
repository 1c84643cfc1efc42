"""Named crash points for fault-injection tests.

`GENENV_CRASH_AT=<point>` makes the process kill itself with SIGKILL when it reaches that point, the
harshest way a worker can die (no cleanup, no exception handlers). Unset, a crash point does nothing. With
`GENENV_CRASH_MARKER=<file>` as well, only the first process to reach it dies (it creates the file), so a worker
that is restarted, with the same environment, gets past it.
"""

from __future__ import annotations

import os
import signal


def crash_point(name: str) -> None:
    if os.environ.get("GENENV_CRASH_AT") == name and _first_to_reach():
        os.kill(os.getpid(), signal.SIGKILL)


def _first_to_reach() -> bool:
    marker = os.environ.get("GENENV_CRASH_MARKER")
    if not marker:
        return True
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True
