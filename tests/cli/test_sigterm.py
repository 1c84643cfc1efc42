"""SIGTERM stops `genenv evolve` as Ctrl-C does: nothing it started (the temporary Prefect server) outlives it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.pipeline.conftest import small_config

pytestmark = pytest.mark.slow


def test_sigterm_leaves_no_process_behind(tiny_model_dir: Path, tmp_path: Path) -> None:
    config = small_config(tiny_model_dir, tmp_path / "data").replace(generations=1)
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config.to_dict()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    command = [sys.executable, "-m", "genenv.cli", "evolve", "--config", str(config_file)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        descendants = _started_children(process, timeout=120)
        time.sleep(3)  # into the flow run
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=90) != 0
        survivors = [child.pid for child in descendants if _alive(child)]
        assert survivors == [], f"left running after SIGTERM: {survivors}"
    finally:
        if process.poll() is None:
            process.kill()


def _started_children(process: subprocess.Popen, timeout: float) -> list[psutil.Process]:
    """The descendants once the run has its temporary Prefect server (a child process) up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = psutil.Process(process.pid).children(recursive=True)
        if children:
            return children
        assert process.poll() is None, "genenv evolve exited before it started anything"
        time.sleep(0.5)
    raise AssertionError("genenv evolve started no temporary server")


def _alive(child: psutil.Process) -> bool:
    try:
        return child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
