"""Where a demo generation's wall time and memory go: each stage's own work, the warehouse inside it, and what
Prefect adds around it; with the peak resident memory of each stage.

    python bench/stage_overhead.py [--config configs/demo.yaml] [--generations 1] [--set key=value ...]
                                   [--model DIR] [--smoke]

Runs the config's evolve flow in this process (on the Prefect server PREFECT_API_URL names, else a temporary
one, as `genenv evolve` does) in a scratch data folder, and measures, side by side in that one run:
- each stage body's wall time (between the stage contract's `before` and `end` points), and within it the time
  spent in `Warehouse` calls (reads, appends, commits; outermost call only);
- each generation subflow's wall time, as the Prefect server recorded it; what the stage bodies leave of it is
  orchestration (task and subflow runs, state changes, concurrency-slot requests, artifacts);
- the process's resident memory, sampled every few milliseconds from /proc (Linux), its peak within each stage.
Prints one line per stage, then, for each generation after 0, orchestration and warehouse as shares of its wall
time, and the peak of the whole run. What it instruments (the stage contract's crash points, the warehouse's
methods) is put back when the run ends.
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from options import add_model_options, parsed  # bench/ is the script's folder
from rss import RssSampler

SMOKE_SIZES = {
    "precision": "float32",
    "seeds_per_generation": 3,
    "variations_per_seed": 2,
    "rollouts_per_task": 2,
    "p_hat_rollouts": 3,
    "pool_tasks_per_generation": 2,
    "simulator_max_new_tokens": 24,
    "agent_max_new_tokens": 12,
    "warm_start_examples": 8,
    "max_heldout": 4,
}
"""The config sizes of a smoke run, as the suite's end-to-end tests run the tiny model."""


@dataclass
class Stage:
    generation: int
    name: str
    start: float
    end: float = 0.0
    warehouse: float = 0.0


@dataclass
class Recorder:
    """Stage intervals from the contract's crash points, and warehouse time attributed to the open stage."""

    stages: list[Stage] = field(default_factory=list)
    depth: threading.local = field(default_factory=threading.local)

    def point(self, label: str) -> None:
        generation, where, name = label.split(":", 2)
        if where == "before":
            self.stages.append(Stage(int(generation[1:]), name, time.time()))
        elif where == "end":
            self.stages[-1].end = time.time()

    def timed(self, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            outer = getattr(self.depth, "n", 0) == 0
            self.depth.n = getattr(self.depth, "n", 0) + 1
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.depth.n -= 1
                if outer and self.stages and not self.stages[-1].end:
                    self.stages[-1].warehouse += time.perf_counter() - started

        return wrapper


def generation_walls(run_id: str) -> dict[int, float]:
    """Each generation subflow's wall time as the Prefect server recorded it (named `<run id>-g<N>`)."""
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(like_=f"{run_id}-g")))
    return {
        int(run.name.rsplit("-g", 1)[1]): (run.end_time - run.start_time).total_seconds()
        for run in runs
        if run.start_time and run.end_time
    }


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--config", default="configs/demo.yaml")
    parser.add_argument("--generations", type=int, default=1, help="GenEnv generations after generation 0")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    args = parsed(parser, generations=0)

    from genenv.config import load_config, parse_overrides
    from genenv.flows.evolve import evolve
    from genenv.pipeline import contract
    from genenv.warehouse.store import Warehouse

    recorder = Recorder()
    scratch = Path(tempfile.mkdtemp(prefix="genenv-overhead-"))
    if args.models.is_dir():
        (scratch / "models").symlink_to(args.models.resolve())
    overrides = {
        **(SMOKE_SIZES if args.smoke else {}),
        **({"model": str(args.model)} if args.model else {}),
        "data_dir": str(scratch),
        "generations": args.generations,
        **parse_overrides(args.set),
    }
    config = load_config(args.config, overrides)
    sampler = RssSampler()
    sampler.start()
    started = time.time()
    with ExitStack() as instrumented:
        instrumented.enter_context(mock.patch.object(contract, "crash_point", recorder.point))
        for name in ("table", "version", "append", "read", "has_rows", "committed", "commit_generation", "run"):
            instrumented.enter_context(mock.patch.object(Warehouse, name, recorder.timed(getattr(Warehouse, name))))
        run_id = evolve(config.to_dict())
    total = time.time() - started
    sampler.stopped.set()
    walls = generation_walls(run_id)

    print(f"{args.config}, generations 0..{args.generations}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'stage':<24} {'seconds':>8} {'warehouse s':>12} {'peak RSS MB':>12}")
    for stage in recorder.stages:
        peak = sampler.peak(stage.start, stage.end) / 2**20
        label = f"g{stage.generation} {stage.name}"
        print(f"{label:<24} {stage.end - stage.start:8.2f} {stage.warehouse:12.2f} {peak:12.0f}")
    for generation in range(1, args.generations + 1):
        mine = [s for s in recorder.stages if s.generation == generation]
        body = sum(s.end - s.start for s in mine)
        warehouse = sum(s.warehouse for s in mine)
        wall = walls[generation]
        orchestration = wall - body
        print(
            f"generation {generation}: wall {wall:.1f} s (Prefect subflow), stages {body:.1f} s | orchestration "
            f"{orchestration:.1f} s = {100 * orchestration / wall:.1f}% | warehouse {warehouse:.1f} s = "
            f"{100 * warehouse / wall:.1f}% | together {100 * (orchestration + warehouse) / wall:.1f}%"
        )
    peak = max(rss for _, rss in sampler.samples) / 2**20
    print(f"whole run {total:.0f} s (server start and model load included); peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
