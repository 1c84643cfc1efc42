"""Process environment for a run: caches and Prefect's state inside the project's data folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def prepare_environment(data_dir: str) -> None:
    """Set before Prefect or transformers are imported; values the user already set win."""
    data = Path(data_dir).resolve()
    (data / "prefect").mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HOME", str(data / "hf"))
    os.environ.setdefault("PREFECT_HOME", str(data / "prefect"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def invoked_as() -> str:
    """How the user ran genenv (e.g. `.venv/bin/genenv` from `make demo`), for commands we suggest next."""
    program = sys.argv[0] if sys.argv else ""
    return program if Path(program).name == "genenv" else "genenv"
