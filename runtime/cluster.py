"""Whether the Ray cluster a config names can be reached from here, probed before anything loads (validate, in
genenv/validation.py, calls it; the config itself opens no socket): Ray installed, and the head's port answering."""

from __future__ import annotations

import importlib.util
import os
import socket
import tempfile
from pathlib import Path

from genenv.config import ConfigError

RAY_INSTALL_HINT = "needs Ray: pip install 'genenv-coevolve[ray]' (a checkout: make installs it)"
RAY_START_HINT = (
    "start one with `ray start --head --node-ip-address 127.0.0.1 --port 6379`, then ray_address: 127.0.0.1:6379"
)


def check_cluster(ray_address: str) -> None:
    """ConfigError naming `ray_address` unless it is empty, 'local' with Ray installed, or a cluster whose head's
    port answers (not on every config: a stored config names the cluster of the machine that ran it)."""
    if not ray_address:
        return
    if importlib.util.find_spec("ray") is None:
        raise ConfigError(f"ray_address: {RAY_INSTALL_HINT} (got {ray_address!r})")
    if ray_address == "local":
        return
    address = ray_address
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS", "") or _current_ray_cluster()
        if not address:
            raise ConfigError(f"ray_address: no Ray cluster runs on this machine (got 'auto'); {RAY_START_HINT}")
    host, port = ray_host_port(address)
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"ray_address: cannot reach the Ray cluster at {address!r} ({exc}); {RAY_START_HINT}"
        ) from None


def ray_host_port(address: str) -> tuple[str, str]:
    """('HOST', 'PORT') of 'HOST:PORT' or 'ray://HOST:PORT'."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    return host, port


def _current_ray_cluster() -> str:
    """The address `ray start` leaves for 'auto' to find (Ray's own file), or ''."""
    path = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    return path.read_text().strip() if path.is_file() else ""
