"""A non-editable install: one `genenv` namespace in site-packages, a working CLI, package data included."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LOCAL_ONLY = {".git", ".venv", "data", "build", ".ruff_cache", ".pytest_cache"}


def _not_sources(folder: str, names: list[str]) -> set[str]:
    """The checkout's own state (venv, data folder, caches), not what a clone would hold."""
    top = LOCAL_ONLY if Path(folder) == REPO else set()
    return {name for name in names if name in top or name == "__pycache__" or name.endswith(".egg-info")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install .` of a copy of the checkout into a bare target folder (dependencies come from this venv)."""
    root = tmp_path_factory.mktemp("install")
    source, target = root / "source", root / "site-packages"
    shutil.copytree(REPO, source, ignore=_not_sources)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", target, source],
        check=True,
        capture_output=True,
    )
    return target


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """`pip wheel .` of a copy of the checkout: the copy, and the names in the wheel."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=_not_sources)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", root, source],
        check=True,
        capture_output=True,
    )
    [built] = root.glob("genenv_coevolve-*.whl")
    with zipfile.ZipFile(built) as archive:
        return source, set(archive.namelist())


def _run(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """Python with only the installed copy on the path for project code (never the checkout)."""
    env = {**os.environ, "PYTHONPATH": str(installed), "PYTHONSAFEPATH": "1"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_only_the_genenv_namespace_is_installed(installed: Path) -> None:
    top_level = {path.name for path in installed.iterdir() if not path.name.endswith((".dist-info", ".egg-info"))}
    assert top_level - {"bin"} == {"genenv"}
    assert {"tasks", "models", "flows", "warehouse", "domains"} <= {p.name for p in (installed / "genenv").iterdir()}


def test_bare_package_names_are_not_importable_and_the_cli_works(installed: Path, tmp_path: Path) -> None:
    user_models = tmp_path / "models"  # a user's own folder of that name must not shadow ours
    user_models.mkdir()
    probe = _run(installed, tmp_path, "-c", "import importlib.util as u; print(u.find_spec('tasks'))")
    assert probe.stdout.strip() == "None", probe.stderr
    cli = _run(installed, tmp_path, "-m", "genenv.cli", "--help")
    assert cli.returncode == 0 and "evolve" in cli.stdout, cli.stderr
    data = _run(
        installed,
        tmp_path,
        "-c",
        "from genenv.commands.stack import GPU_TEMPLATE; from genenv.domains.base import get_domain; "
        "import genenv.models.policy as p; "
        "print(GPU_TEMPLATE.is_file(), len(get_domain('tool_call').load_seeds()), p.__file__)",
    )
    shown = data.stdout.split()
    assert shown[:2] == ["True", "500"], data.stderr
    assert shown[2].startswith(str(installed)), shown[2]


def test_evolve_reads_a_config_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    """A bad value in the user's own file is refused by name, before any model loads: the file was read."""
    (tmp_path / "mine.yaml").write_text("run_name: mine\ngenerations: -1\n")
    refused = _run(installed, tmp_path, "-m", "genenv.cli", "evolve", "--config", "mine.yaml")
    assert refused.returncode != 0
    assert "generations: must be >= 0" in refused.stderr, refused.stderr


def test_the_wheel_holds_every_package_and_data_file_and_no_tests(wheel: tuple[Path, set[str]]) -> None:
    """Every folder with an __init__.py under a mapped folder, and every JSON data file there, found on disk: a new
    subpackage or data file ships without a list to update."""
    source, names = wheel
    mapped = tomllib.loads((source / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    expected = set()
    for package, folder in mapped.items():
        prefix = package.replace(".", "/")
        for path in (source / folder).rglob("*"):
            if path.name == "__init__.py" or path.suffix in (".json", ".jsonl"):
                expected.add(f"{prefix}/{path.relative_to(source / folder).as_posix()}")
    assert {"genenv/domains/tool_call/data/seeds.jsonl", "genenv/infra/gpu-process-job-template.json"} <= expected
    assert expected - names == set()
    assert {name.split("/")[0] for name in names} == {"genenv", "genenv_coevolve-0.1.0.dist-info"}
    assert not [name for name in names if {"tests", "bench"} & set(name.split("/"))]
