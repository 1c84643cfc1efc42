"""The model is found before a run is registered: a model that cannot load ends `genenv evolve` in one line that says
what to fix, with no traceback (unless --debug) and no run left in the warehouse. The hub is offline here
(HF_HUB_OFFLINE), as it is on a machine without one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from genenv.config import ConfigError, GenEnvConfig
from genenv.flows.evolve import evolve


def _evolve(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env |= {"HF_HUB_OFFLINE": "1", "PREFECT_HOME": str(tmp_path / "prefect")}
    command = [sys.executable, "-m", "genenv.cli", *extra, "evolve", "--set", f"data_dir={tmp_path / 'data'}"]
    return subprocess.run(
        [*command, "--set", "model=nobody/no-such-model"], env=env, capture_output=True, text=True, timeout=300
    )


def test_a_hub_model_that_cannot_be_fetched_registers_no_run(tmp_path: Path) -> None:
    refused = _evolve(tmp_path)
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("genenv: model: could not download 'nobody/no-such-model'"), lines
    assert "pass a local model folder instead" in lines[0]
    assert not (tmp_path / "data" / "warehouse").exists()  # no run registered, no table written
    debug = _evolve(tmp_path, "--debug")
    assert debug.returncode == 2 and "Traceback" in debug.stderr


def test_the_evolve_flow_checks_the_model_before_it_registers_the_run(prefect_server, monkeypatch, tmp_path) -> None:
    """The same check in the flow, for deployments, which start it without the CLI. The hub's download is replaced
    by one that fails as an unreachable hub does: this process may have imported huggingface_hub before
    HF_HUB_OFFLINE could apply."""

    def offline(repo_id: str, cache_dir: Path) -> str:
        raise OSError("no model hub here")

    monkeypatch.setattr("huggingface_hub.snapshot_download", offline)
    config = GenEnvConfig(model="nobody/no-such-model", data_dir=str(tmp_path / "data"))
    with pytest.raises(ConfigError, match="could not download 'nobody/no-such-model'"):
        evolve(config.to_dict())
    assert not (tmp_path / "data" / "warehouse").exists()
