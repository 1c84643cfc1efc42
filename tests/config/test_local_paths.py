"""Where a run reads and writes, checked by `validate` before any model loads or a run is registered: one line."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from genenv.config import ConfigError, GenEnvConfig
from genenv.validation import validate


def test_a_model_path_that_does_not_exist_is_refused_not_tried_as_a_hub_id(tmp_path):
    for model in ("/no/such/model", "./models/mine", "~/nowhere/model", "data/models/x"):
        with pytest.raises(ConfigError, match=f"model: local folder '{model}' does not exist"):
            validate(GenEnvConfig(model=model, data_dir=str(tmp_path)))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="has no config.json"):
        validate(GenEnvConfig(model=str(tmp_path / "empty"), data_dir=str(tmp_path)))
    (tmp_path / "empty" / "config.json").write_text("{}")
    validate(GenEnvConfig(model=str(tmp_path / "empty"), data_dir=str(tmp_path)))
    validate(GenEnvConfig(model="HuggingFaceTB/SmolLM2-135M-Instruct", data_dir=str(tmp_path)))  # a hub id


def test_a_benchmarks_dir_that_does_not_exist_is_refused_here_not_in_a_stored_config(tmp_path):
    """A stored config names the folders of the machine that ran it: reading it elsewhere (to score the run) works."""
    elsewhere = GenEnvConfig(data_dir=str(tmp_path), benchmarks_dir="/no/such/folder")
    with pytest.raises(ConfigError, match=r"^benchmarks_dir: folder does not exist \(got '/no/such/folder'\)"):
        validate(elsewhere)


def test_a_data_dir_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="data_dir: '.*file' is a file, not a folder"):
        validate(GenEnvConfig(data_dir=str(tmp_path / "file")))


def test_a_data_dir_that_cannot_be_written_is_refused(tmp_path):
    """Checked by writing there. Root writes through permission bits, so the folder is one no process may write:
    sysfs (a locked folder for any other user)."""
    if os.geteuid() == 0:
        unwritable = Path("/sys/genenv-data")
    else:
        (tmp_path / "locked").mkdir(mode=0o555)
        unwritable = tmp_path / "locked" / "data"
    with pytest.raises(ConfigError, match=f"data_dir: '{unwritable}' is not writable"):
        validate(GenEnvConfig(data_dir=str(unwritable)))


def test_the_cli_refuses_a_missing_model_in_one_line_before_registering_a_run(tmp_path):
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "genenv.cli",
            "evolve",
            "--set",
            "model=/no/such/model",
            "--set",
            f"data_dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and time.monotonic() - started < 30
    assert done.stderr.strip().splitlines() == [
        "genenv: model: local folder '/no/such/model' does not exist (a hub id looks like org/name; the embedded "
        "model is embedded:smollm2-135m-instruct)"
    ]
    assert not (Path(tmp_path) / "warehouse").exists()


def test_a_ray_cluster_that_cannot_be_reached_is_refused_with_how_to_start_one(tmp_path):
    with socket.socket() as probe:  # a loopback port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        config = GenEnvConfig(data_dir=str(tmp_path), ray_address=address)
        with pytest.raises(ConfigError, match=f"ray_address: cannot reach the Ray cluster at '{address}'.*ray start"):
            validate(config)
    with pytest.raises(ConfigError, match="rollout_workers: must be >= 1"):
        validate(GenEnvConfig(ray_address="local", rollout_workers=0))
    with listening() as port:
        validate(GenEnvConfig(data_dir=str(tmp_path), ray_address=f"127.0.0.1:{port}"))


@contextlib.contextmanager
def listening():
    """A loopback port that accepts connections, as a cluster head's does."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.mark.skipif(importlib.util.find_spec("textworld") is None, reason="the text-game extra is not installed")
def test_rollout_workers_refuse_a_domain_played_turn_by_turn():
    config = GenEnvConfig(ray_address="local", domain="text_game")
    with pytest.raises(ConfigError, match="^ray_address: rollout workers answer in one turn; text_game is played"):
        validate(config)
