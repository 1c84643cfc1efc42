"""Type-check the product packages with mypy, as `make test` does: `python -m tests.support.typecheck`.

The checkout's top-level folders are the subpackages genenv.tasks, genenv.models, ... (pyproject.toml's
package-dir), which the editable install maps with an import hook that mypy cannot follow. So mypy reads a tree of
links laid out as the installed package (build/typecheck/genenv, rebuilt each time, git-ignored), and the report
names the checkout's files. tests/ and bench/ are not checked: they are not part of the package.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "build" / "typecheck"


def package_dirs() -> dict[str, Path]:
    """genenv and each of its subpackages -> the checkout's folder that holds it."""
    mapping = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    return {name: REPO / folder for name, folder in mapping.items()}


def link_tree() -> None:
    """build/typecheck/genenv: links to genenv/'s own files and to every mapped subpackage folder."""
    dirs = package_dirs()
    package = TREE / "genenv"
    shutil.rmtree(package, ignore_errors=True)
    package.mkdir(parents=True)
    for entry in dirs.pop("genenv").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, folder in dirs.items():
        (package / name.removeprefix("genenv.")).symlink_to(folder, target_is_directory=True)


def checkout_paths(report: str) -> str:
    """mypy's paths in the link tree (genenv/tasks/x.py) as the checkout's (tasks/x.py)."""
    for name, folder in sorted(package_dirs().items(), key=lambda item: -len(item[0])):
        report = report.replace(name.replace(".", "/") + "/", folder.relative_to(REPO).as_posix() + "/")
    return report


def main() -> int:
    link_tree()
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), "-p", "genenv"],
        cwd=TREE,
        capture_output=True,
        text=True,
    )
    print(checkout_paths(done.stdout), end="")
    print(done.stderr, end="", file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
