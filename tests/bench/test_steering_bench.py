"""bench/steering.py in its smoke mode on the tiny model: every arm trains with the flow's own update and is measured
before and after, and the shifted run measures both targets, so the full benchmark cannot rot unnoticed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "steering.py"


def test_the_steering_bench_runs_every_arm_and_the_shift(tiny_model_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", "--model", str(tiny_model_dir), "--shift"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    share = r"\d\.\d{3} -> \d\.\d{3} \([+-]\d\.\d{3} \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]\)"
    for arm in ("shipped", "oracle", "placebo"):
        assert re.search(rf"^{arm}\s+valid {share} \| at target {share} \| mean operators .* the bar", out, re.M), out
    assert re.search(rf"^  end\s+at 3 {share} \| at 4 {share}$", out, re.M), out
    assert "end against midway: at 4" in out and out.rstrip().splitlines()[-1].startswith("total")
