"""Process environment for a run: caches and Prefect's state inside the project's data folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

TEMPORARY_SERVER_STARTUP_SECONDS = 90


def prepare_environment(data_dir: str) -> None:
    """Set before Prefect or transformers are imported; values the user already set win.

    One Prefect server per data folder: when `genenv stack up` runs a server on this folder's database, the command
    talks to it (and says so) instead of starting a temporary server on the same SQLite file.
    """
    data = Path(data_dir).resolve()
    (data / "prefect").mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HOME", str(data / "hf"))
    os.environ.setdefault("PREFECT_HOME", str(data / "prefect"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Prefect waits 20 s for its temporary server; under load 1 start in about 12 timed out. Set it to change it.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", str(TEMPORARY_SERVER_STARTUP_SECONDS))
    if "PREFECT_API_URL" not in os.environ and Path(os.environ["PREFECT_HOME"]) == data / "prefect":
        api = running_stack_api(data)
        if api is not None:
            os.environ["PREFECT_API_URL"] = api
            print(f"genenv: using the Prefect server of `genenv stack up` at {api} (its UI shows this run)")


def running_stack_api(data: Path) -> str | None:
    """The API of the stack server started on this data folder, when it is alive and answers."""
    from genenv.cli.commands.stack import Stack, healthy

    stack = Stack(str(data))
    port = stack.port
    if stack.pid("server") is None or port is None:
        return None
    api = stack.api_url(port)
    return api if healthy(api) else None


def invoked_as() -> str:
    """How the user ran genenv (e.g. `.venv/bin/genenv` from `make demo`), for commands we suggest next."""
    program = sys.argv[0] if sys.argv else ""
    return program if Path(program).name == "genenv" else "genenv"


def prepare_command(data_dir: str, debug: bool) -> None:
    """What a command that runs flows does first: the environment, then Prefect's console."""
    prepare_environment(data_dir)
    if not debug:
        _quiet_console()


def _quiet_console() -> None:
    """Prefect's console shows an expected failure (a refused config, a busy run, a stop signal) as its one line:
    the traceback that would bury the reason is left out (`genenv --debug` keeps it). The Prefect API's copy of
    each log keeps its traceback."""
    import logging

    from prefect.logging.configuration import setup_logging
    from prefect.logging.handlers import PrefectConsoleHandler

    from genenv.config import ConfigError
    from genenv.errors import RerunError, WarehouseError

    setup_logging()
    expected = (ConfigError, WarehouseError, RerunError, KeyboardInterrupt)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not isinstance(handler.formatter, _WithoutTracebacks):
            handler.setFormatter(_WithoutTracebacks(handler.formatter or logging.Formatter(), expected))


class _WithoutTracebacks:
    """A console formatter that leaves out the traceback of the expected errors."""

    def __init__(self, inner, expected: tuple[type[BaseException], ...]) -> None:
        self.inner, self.expected = inner, expected

    def format(self, record):
        if not (record.exc_info and isinstance(record.exc_info[1], self.expected)):
            return self.inner.format(record)
        saved = record.exc_info, record.exc_text
        record.exc_info = record.exc_text = None
        try:
            return self.inner.format(record)
        finally:
            record.exc_info, record.exc_text = saved
