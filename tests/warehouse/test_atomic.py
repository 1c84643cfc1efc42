"""atomic_path: the target holds the old content or the new, and no staging leftovers stay beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from genenv.atomic import atomic_path


def write(path: Path, kind: str, text: str) -> None:
    if kind == "folder":
        path.mkdir()
        path = path / "content.txt"
    path.write_text(text)


def read(path: Path, kind: str) -> str:
    return (path / "content.txt").read_text() if kind == "folder" else path.read_text()


@pytest.mark.parametrize("kind", ["file", "folder"])
@pytest.mark.parametrize("existing", [True, False])
def test_success_replaces_the_target(tmp_path: Path, kind: str, existing: bool) -> None:
    target = tmp_path / "target"
    if existing:
        write(target, kind, "old")
    with atomic_path(target) as staging:
        write(staging, kind, "new")
        assert not target.exists() or read(target, kind) == "old"
    assert read(target, kind) == "new"
    assert list(tmp_path.iterdir()) == [target]


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_failure_leaves_the_target_untouched(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "target"
    write(target, kind, "old")
    with pytest.raises(RuntimeError), atomic_path(target) as staging:
        write(staging, kind, "half")
        raise RuntimeError("writer died")
    assert read(target, kind) == "old"
    assert list(tmp_path.iterdir()) == [target]


def test_a_failed_swap_restores_the_old_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "target"
    write(target, "folder", "old")
    rename = Path.rename

    def failing(self: Path, to: Path) -> Path:
        if self.name.endswith(".partial"):
            raise OSError("disk gone")
        return rename(self, to)

    monkeypatch.setattr(Path, "rename", failing)
    with pytest.raises(OSError, match="disk gone"), atomic_path(target) as staging:
        write(staging, "folder", "new")
    assert read(target, "folder") == "old"
    assert list(tmp_path.iterdir()) == [target]


def test_without_replace_an_existing_target_wins(tmp_path: Path) -> None:
    target = tmp_path / "target"
    with atomic_path(target, replace=False) as staging:
        write(staging, "folder", "mine")
        write(target, "folder", "theirs")  # a concurrent writer finished first
    assert read(target, "folder") == "theirs"
    assert list(tmp_path.iterdir()) == [target]
