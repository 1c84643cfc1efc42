"""One writer per run: the lease a second writer cannot take, a dead writer leaves behind, and a live one renews."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from genenv.warehouse import leases
from genenv.warehouse.leases import RunLeased, lease_uri, run_lease
from genenv.warehouse.storage import filesystem

HOLD = """
import sys, time
from genenv.warehouse.leases import run_lease
with run_lease(sys.argv[1], "r1"):
    print("held", flush=True)
    time.sleep(600)
"""


def _holding_process(root_uri: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", HOLD, root_uri], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_second_writer_fails_at_once_naming_the_holder(root_uri):
    holder = _holding_process(root_uri)
    try:
        started = time.monotonic()
        named = f"run r1 is being written by process {holder.pid} on {socket.gethostname()}"
        with pytest.raises(RunLeased, match=named), run_lease(root_uri, "r1"):
            pass
        assert time.monotonic() - started < 10
    finally:
        holder.kill()
        holder.wait()


def test_a_lease_left_by_a_killed_writer_is_taken_over(root_uri):
    holder = _holding_process(root_uri)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    fs, path = filesystem(lease_uri(root_uri, "r1"))
    assert json.loads(fs.cat_file(path))["pid"] == holder.pid  # SIGKILL left it behind
    with run_lease(root_uri, "r1"):
        assert json.loads(fs.cat_file(path))["pid"] == os.getpid()
    assert not fs.exists(path)  # released


def test_a_lease_left_by_a_killed_writer_not_yet_reaped_is_taken_over(root_uri):
    """Until its parent waits for it, a killed writer is a zombie: its pid and start time still answer."""
    holder = _holding_process(root_uri)
    holder.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 30
    while psutil.Process(holder.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the killed writer never became a zombie"
        time.sleep(0.05)
    try:
        with run_lease(root_uri, "r1"):
            fs, path = filesystem(lease_uri(root_uri, "r1"))
            assert json.loads(fs.cat_file(path))["pid"] == os.getpid()
    finally:
        holder.wait()


def test_the_same_process_takes_its_own_lease_again_and_keeps_it_until_the_outer_block_ends(root_uri):
    fs, path = filesystem(lease_uri(root_uri, "r1"))
    with run_lease(root_uri, "r1"):
        with run_lease(root_uri, "r1"):
            pass
        assert fs.exists(path)
    assert not fs.exists(path)


def test_a_lease_another_host_stopped_renewing_is_stale_and_a_renewed_one_is_not(root_uri, monkeypatch):
    fs, path = filesystem(lease_uri(root_uri, "r1"))
    elsewhere = {"host": "another-host", "pid": 1, "process_started": 0.0, "renewed_at": time.time()}
    fs.makedirs(fs._parent(path), exist_ok=True)
    fs.pipe_file(path, json.dumps(elsewhere).encode())
    with pytest.raises(RunLeased, match="process 1 on another-host"), run_lease(root_uri, "r1"):
        pass
    fs.pipe_file(path, json.dumps({**elsewhere, "renewed_at": time.time() - leases.STALE_SECONDS - 1}).encode())
    with run_lease(root_uri, "r1"):
        assert json.loads(fs.cat_file(path))["host"] == socket.gethostname()


def test_the_holder_renews_its_lease(tmp_path, monkeypatch):
    monkeypatch.setattr(leases, "RENEW_SECONDS", 0.05)
    path = Path(lease_uri(str(tmp_path), "r1"))
    with run_lease(str(tmp_path), "r1"):
        first = json.loads(path.read_text())["renewed_at"]
        time.sleep(0.5)
        assert json.loads(path.read_text())["renewed_at"] > first
