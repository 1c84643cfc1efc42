"""One writer per run: a lease on (warehouse, run id) that a second writer cannot take and a dead one leaves behind.

Two `genenv evolve` processes on one run both wrote every generation (duplicate trajectories, two `generations`
rows). A writer now holds `<warehouse>/_leases/<run id>.json` while it runs: created only if absent (O_EXCL on a
folder, a conditional put with If-None-Match on S3), naming its host, process id and that process's start time, and
renewed every RENEW_SECONDS. A second writer fails at once with a message naming the holder. A lease is stale, and
taken over, when its holder is a process of this host that no longer runs (a SIGKILL leaves the file behind), or,
from any host, when it has not been renewed for STALE_SECONDS.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psutil

from genenv.atomic import atomic_path
from genenv.errors import WarehouseError
from genenv.warehouse.storage import filesystem, is_remote, join, translated

_HELD: dict[str, int] = {}
"""Leases this process holds, with how many blocks hold each: an evolve holds its run's, and each generation flow
it runs takes the same lease again without waiting on itself."""
RENEW_SECONDS = 30.0
STALE_SECONDS = 300.0
"""A lease not renewed for this long is taken over from any host (ten missed renewals)."""


class RunLeased(WarehouseError):
    """Another live process writes this run; the message names it."""


def lease_uri(root_uri: str, run_id: str) -> str:
    return join(root_uri, "_leases", f"{run_id}.json")


@contextmanager
def run_lease(root_uri: str, run_id: str) -> Iterator[None]:
    """Hold the run's lease for the block: raise RunLeased at once if a live writer holds it, take it over from a
    dead one, renew it while the block runs and release it after (even on an exception)."""
    uri = lease_uri(root_uri, run_id)
    if uri in _HELD:
        _HELD[uri] += 1
        try:
            yield
        finally:
            _HELD[uri] -= 1
        return
    mine = _acquire(uri, run_id)
    _HELD[uri] = 1
    stop = threading.Event()
    renewer = threading.Thread(target=_renew, args=(uri, mine, stop), name=f"lease-{run_id}", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        del _HELD[uri]
        stop.set()
        renewer.join()
        _release(uri, mine)


def _holder() -> dict[str, Any]:
    process = psutil.Process()
    return {"host": socket.gethostname(), "pid": process.pid, "process_started": _started(process)}


def _started(process: psutil.Process) -> float:
    """When the process started: with its pid, it tells a live holder from a later process given the same pid."""
    return round(process.create_time(), 2)


def _acquire(uri: str, run_id: str) -> dict[str, Any]:
    for _ in range(3):  # a takeover that loses a race to another taker looks again
        mine = {**_holder(), "renewed_at": time.time()}
        if _create(uri, mine):
            return mine
        held = _read(uri)
        if held is None:
            continue  # released between our two calls
        if not _stale(held):
            raise RunLeased(
                f"run {run_id} is being written by process {held.get('pid')} on {held.get('host')} (lease {uri}); "
                "wait for it to finish, or stop it and run again to resume"
            )
        _remove_if(uri, held)
    raise RunLeased(f"run {run_id}: could not take its lease {uri} (other writers keep taking it)")


def _stale(held: dict[str, Any]) -> bool:
    if time.time() - float(held.get("renewed_at", 0)) > STALE_SECONDS:
        return True
    if held.get("host") != socket.gethostname():
        return False
    try:
        process = psutil.Process(int(held["pid"]))
        # A killed holder stays a zombie until its parent reaps it: it writes nothing any more.
        return _started(process) != held.get("process_started") or process.status() == psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, KeyError, ValueError):
        return True


def _create(uri: str, record: dict[str, Any]) -> bool:
    """Write the lease only if none exists: True when this call created it."""
    data = json.dumps(record).encode()
    fs, path = filesystem(uri)
    with translated(uri):
        if not is_remote(uri):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
            return True
        try:
            fs.pipe_file(path, data, mode="create")
        except FileExistsError:
            return False
        except OSError as exc:  # S3 answers 412 Precondition Failed, which s3fs passes on as EINVAL
            if "precondition" in str(exc).lower().replace("-", ""):
                return False
            raise
        return True


def _read(uri: str) -> dict[str, Any] | None:
    fs, path = filesystem(uri)
    with translated(uri):
        try:
            return json.loads(fs.cat_file(path))
        except FileNotFoundError:
            return None
        except json.JSONDecodeError:
            return {}  # a torn write by a killed holder: renewed_at 0, so stale


def _remove_if(uri: str, expected: dict[str, Any]) -> None:
    """Remove the lease if it still holds `expected`; a lease someone renewed or took meanwhile is left alone."""
    fs, path = filesystem(uri)
    if not is_remote(uri):
        # Claim the stale file by renaming it (atomic: of two takers only one moves it), then check what was moved.
        claimed = f"{path}.{os.getpid()}.stale"
        try:
            os.rename(path, claimed)
        except FileNotFoundError:
            return
        with open(claimed, "rb") as file:
            moved = json.loads(file.read() or b"{}")
        if moved == expected:
            os.remove(claimed)
        else:  # renewed between our read and the rename: put it back unless a new lease took its place
            with suppress(FileExistsError):
                os.link(claimed, path)
            os.remove(claimed)
        return
    with translated(uri):
        if _read(uri) == expected:
            fs.rm_file(path)


def _renew(uri: str, mine: dict[str, Any], stop: threading.Event) -> None:
    """Every RENEW_SECONDS, mark the lease alive, as long as it is still this writer's."""
    fs, path = filesystem(uri)
    while not stop.wait(RENEW_SECONDS):
        if _read(uri) != mine:
            return  # taken over (this process was presumed dead): never overwrite the new holder
        mine["renewed_at"] = time.time()
        with suppress(WarehouseError, OSError), translated(uri):
            if is_remote(uri):
                fs.pipe_file(path, json.dumps(mine).encode())  # an S3 put replaces the object whole
            else:  # write-then-rename: never a truncated file a reader could take for a torn, stale lease
                with atomic_path(Path(path)) as staging:
                    staging.write_bytes(json.dumps(mine).encode())


def _release(uri: str, mine: dict[str, Any]) -> None:
    fs, path = filesystem(uri)
    with suppress(WarehouseError, OSError), translated(uri):
        if _read(uri) == mine:
            fs.rm_file(path)
