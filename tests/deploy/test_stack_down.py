"""One server per data folder: CLI commands use the running stack; `genenv stack down` leaves no flow run "Running"
for ever (a run it cut off is Crashed, which Retry can resume)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.states import Running

from genenv.cli.commands.environment import prepare_environment
from genenv.config import ConfigError, GenEnvConfig
from genenv.validation import validate
from tests.support.workers import ONE_RAY

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


@flow(name="cut-off")
def cut_off() -> None:
    """Never executed: the test only needs a flow run the server believes is running."""


def _genenv(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "genenv.cli", *args], cwd=REPO, env=env, check=True, timeout=150, capture_output=True
    )
    return done.stdout.decode()


def test_stack_down_marks_runs_in_flight_crashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    stack = ["--data-dir", str(tmp_path)]
    api = f"http://127.0.0.1:{port}/api"
    _genenv("stack", "up", *stack, "--port", str(port), env=env)
    try:
        for name in ("PREFECT_API_URL", "PREFECT_HOME"):
            monkeypatch.delenv(name, raising=False)
        prepare_environment(str(tmp_path))  # a CLI command on this data folder talks to the stack's server
        assert os.environ["PREFECT_API_URL"] == api
        with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            flow_run = client.create_flow_run(cut_off, state=Running())
        assert "marked 1 flow run(s) in flight as Crashed" in _genenv("stack", "down", *stack, env=env)
        _genenv("stack", "up", *stack, "--port", str(port), env=env)
        with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            state = client.read_flow_run(flow_run.id).state
        assert state.is_crashed() and "genenv stack down" in state.message
    finally:
        _genenv("stack", "down", *stack, env=env)


@ONE_RAY
def test_stack_up_starts_a_ray_head_that_down_stops(tmp_path: Path) -> None:
    """`--ray-port`: a Ray head on loopback that a run's ray_address reaches, stopped by `down` with all it started."""
    ports = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
    port, ray_port = ports
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    stack = ["--data-dir", str(tmp_path)]
    address = f"127.0.0.1:{ray_port}"
    try:
        out = _genenv("stack", "up", *stack, "--port", str(port), "--ray-port", str(ray_port), env=env)
        assert f"--set ray_address={address}" in out
        validate(GenEnvConfig(data_dir=str(tmp_path), ray_address=address))
        head = int((tmp_path / "prefect" / "stack" / "ray.pid").read_text())
        status = _genenv("stack", "status", *stack, env=env)
        assert f"ray_pid: {head}" in status and f"ray_address: {address}" in status
    finally:
        assert "ray head" in _genenv("stack", "down", *stack, env=env)
    with pytest.raises(ProcessLookupError):
        os.killpg(head, 0)  # nothing the head started is left
    with pytest.raises(ConfigError, match="cannot reach the Ray cluster"):
        validate(GenEnvConfig(data_dir=str(tmp_path), ray_address=address))
