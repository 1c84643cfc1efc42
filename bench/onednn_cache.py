"""The demo's generation 0 (seed pool, warm start, held-out evaluation) with oneDNN's primitive cache at its
default capacity (1,024) and at genenv's (`models/cpu/shapes.py ONEDNN_PRIMITIVES`), alternately.

    python bench/onednn_cache.py [--rounds 1] [--capacities 1024 16] [--model DIR] [--smoke]

oneDNN reads its capacity once per process, so each run is a `bench/stage_overhead.py --generations 0` process
with ONEDNN_PRIMITIVE_CACHE_CAPACITY set; the runs alternate. Printed per capacity: the warm start's seconds and
peak resident memory, and the process's peak, from each run's own lines.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from options import add_model_options, parsed  # bench/ is the script's folder

STAGE_LINE = re.compile(r"^g0 (?P<stage>[\w-]+)\s+(?P<seconds>[\d.]+)\s+[\d.]+\s+(?P<peak>\d+)$", re.M)
RUN_PEAK = re.compile(r"peak RSS (?P<peak>\d+) MB")


def run(capacity: int, options: list[str]) -> tuple[dict[str, tuple[float, int]], int]:
    """One `stage_overhead.py --generations 0` process (with `options`) at this capacity: its stages and peak."""
    script = Path(__file__).with_name("stage_overhead.py")
    env = {**os.environ, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": str(capacity)}
    command = [sys.executable, str(script), "--generations", "0", *options]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    stages = {m["stage"]: (float(m["seconds"]), int(m["peak"])) for m in STAGE_LINE.finditer(out)}
    return stages, int(RUN_PEAK.search(out)["peak"])


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--capacities", type=int, nargs="+", default=[1024, 16])
    args = parsed(parser, capacities=[16])
    options = ["--models", str(args.models), *(["--model", str(args.model)] if args.model else [])]
    options += ["--smoke"] if args.smoke else []

    print(f"load average {os.getloadavg()[0]:.1f}, generation 0 of configs/demo.yaml, {args.rounds} round(s)")
    print(f"{'capacity':>8} {'warm start s':>13} {'warm start MB':>14} {'run peak MB':>12}")
    for round_ in range(args.rounds):
        for capacity in args.capacities[:: -1 if round_ % 2 else 1]:
            stages, peak = run(capacity, options)
            seconds, warm_peak = stages["warm-start"]
            print(f"{capacity:>8} {seconds:>13.1f} {warm_peak:>14} {peak:>12}", flush=True)


if __name__ == "__main__":
    main()
