"""Write-then-rename: a reader of a path finds the old content or the new one, never a half-written one."""

from __future__ import annotations

import errno
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(target: Path, *, replace: bool = True) -> Iterator[Path]:
    """Yield a free staging path next to `target` (write a file or build a folder there); it is moved onto `target`
    only if the block succeeds. On failure `target` is untouched and whatever the block left is removed.

    replace=False keeps a `target` that exists when the block ends (a concurrent writer finished first) and drops
    the staged copy.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        yield staging
        if replace or not target.exists():
            _move(staging, target, replace)
    finally:
        _remove(staging)


def _move(staging: Path, target: Path, replace: bool) -> None:
    """os.replace is atomic but refuses a non-empty folder as target: that one is renamed aside, the new one renamed
    in, and only then is the old one deleted (restored if the second rename fails), so no reader sees half of it."""
    try:
        os.replace(staging, target)
        return
    except OSError as error:
        if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        if not replace:  # a concurrent writer's folder landed after the check in atomic_path
            return
    aside = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.previous")
    target.rename(aside)
    try:
        staging.rename(target)
    except BaseException:
        aside.rename(target)
        raise
    _remove(aside)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
