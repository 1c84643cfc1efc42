"""Named crash points for fault-injection tests.

`GENENV_CRASH_AT=<point>` makes the process kill itself with SIGKILL when it reaches that point, the
harshest way a worker can die (no cleanup, no exception handlers). Unset, a crash point does nothing.
"""

from __future__ import annotations

import os
import signal


def crash_point(name: str) -> None:
    if os.environ.get("GENENV_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
