"""bench/gpu_smoke.py's tiny mode, so the GPU smoke check does not rot between the GPUs it runs on: the script loads a
random tiny Qwen2 through PolicyPair.load, generates, takes a warm-start and a GRPO step with the project's code, and
prints each phase beside the memory plan, in a Python that cannot import Prefect, vLLM or Ray and has genenv only as a
checkout (as on a bare GPU machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BLOCKED = (
    "import runpy, sys\n"
    "class Blocked:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ('prefect', 'vllm', 'ray', 'polars', 'deltalake'):\n"
    "            raise ModuleNotFoundError(name + ' is not on a bare GPU machine')\n"
    "sys.meta_path[:] = [Blocked(), *(f for f in sys.meta_path if 'editable' not in type(f).__module__)]\n"
    "sys.argv = ['bench/gpu_smoke.py', '--tiny', '--out', sys.argv[1]]\n"
    "runpy.run_path('bench/gpu_smoke.py', run_name='__main__')\n"
)


def test_the_gpu_smoke_check_runs_its_tiny_mode_with_the_projects_code_alone(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED, str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads((tmp_path / "gpu_smoke.json").read_text())
    assert [r["phase"] for r in rows] == ["load", "generate", "warm start", "GRPO"]
    assert all(r["planned_gib"] > 0 and r["seconds"] > 0 for r in rows)
    assert all(r["tokens_per_second"] > 0 for r in rows[1:])
    assert "tiny-qwen2                   GRPO" in done.stdout and "activation checkpointing: False" in done.stdout
