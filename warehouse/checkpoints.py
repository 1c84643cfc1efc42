"""Model checkpoints (LoRA adapter folders) under the warehouse root, on a local folder or on S3.

A published adapter carries a marker file written last, so a reader never loads a half-uploaded adapter:
locally the folder is assembled under a temporary name and renamed into place; on S3 the files are
uploaded first and the marker after them. The marker holds a publish id, which lets `fetch_adapter`
tell a cached copy of an older publication from the current one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from pathlib import Path

from genenv.atomic import atomic_path
from genenv.errors import WarehouseError
from genenv.warehouse.storage import filesystem, is_remote, join, local_path, translated

MARKER = "_PUBLISHED.json"


def checkpoint_uri(root_uri: str, run_id: str, generation: int, role: str) -> str:
    """<root>/_checkpoints/<run>/gen-<g>/<role>: next to the tables, so one URI holds a whole run."""
    return join(root_uri.rstrip("/"), "_checkpoints", run_id, f"gen-{generation}", role)


def _marker(folder: Path) -> str:
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != MARKER)
    return json.dumps({"publish_id": uuid.uuid4().hex, "files": files})


def publish_adapter(local_folder: Path, uri: str) -> None:
    """Copy an adapter folder to `uri` (replacing an earlier publication) and mark it complete."""
    local_folder = Path(local_folder)
    if not local_folder.is_dir():
        raise WarehouseError(f"no adapter folder at {local_folder}")
    marker = _marker(local_folder)
    if not is_remote(uri):
        with atomic_path(local_path(uri)) as staging:
            shutil.copytree(local_folder, staging)
            (staging / MARKER).write_text(marker)
        return
    fs, path = filesystem(uri)
    with translated(uri):
        if fs.exists(f"{path}/{MARKER}"):
            fs.rm(f"{path}/{MARKER}")
            fs.rm(path, recursive=True)
        for file in json.loads(marker)["files"]:
            fs.put_file(str(local_folder / file), f"{path}/{file}")
        fs.pipe_file(f"{path}/{MARKER}", marker.encode())


def adapter_exists(uri: str) -> bool:
    """True once a publication of `uri` is complete."""
    fs, path = filesystem(uri)
    with translated(uri):
        return fs.exists(f"{path}/{MARKER}")


def adapter_digest(uri: str) -> str:
    """SHA-256 of a published adapter's files (names and bytes, the marker left out): two publications with the same
    digest are the same weights, whatever run, generation or folder holds them."""
    fs, path = filesystem(uri)
    with translated(uri):
        if not fs.exists(f"{path}/{MARKER}"):
            raise WarehouseError(f"no published adapter at {uri}")
        digest = hashlib.sha256()
        for file in json.loads(fs.cat_file(f"{path}/{MARKER}").decode())["files"]:
            digest.update(file.encode() + b"\0")
            digest.update(hashlib.sha256(fs.cat_file(f"{path}/{file}")).digest())
    return digest.hexdigest()


def fetch_adapter(uri: str, cache_dir: Path) -> Path:
    """A local folder holding the adapter, ready for PEFT: the folder itself locally, else a cached download."""
    if not is_remote(uri):
        folder = local_path(uri)
        if not (folder / MARKER).exists():
            raise WarehouseError(f"no published adapter at {uri}")
        return folder
    fs, path = filesystem(uri)
    with translated(uri):
        if not fs.exists(f"{path}/{MARKER}"):
            raise WarehouseError(f"no published adapter at {uri}")
        marker = fs.cat_file(f"{path}/{MARKER}").decode()
        target = Path(cache_dir) / hashlib.sha256(uri.encode()).hexdigest()[:16] / Path(path).name
        if (target / MARKER).exists() and (target / MARKER).read_text() == marker:
            return target
        with atomic_path(target) as staging:
            staging.mkdir()
            for file in json.loads(marker)["files"]:
                (staging / file).parent.mkdir(parents=True, exist_ok=True)
                fs.get_file(f"{path}/{file}", str(staging / file))
            (staging / MARKER).write_text(marker)
    return target
