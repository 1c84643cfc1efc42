"""Agent success and GRPO reward spread at several sampling settings, from a run's generation-0 adapters.

A GRPO group whose k rewards are all equal carries no signal; this measures, on a sample of training seeds, how
often groups differ at each (temperature, top_p). Usage:
`python bench/sampling_spread.py [DATA_DIR] [--smoke]` (a data folder holding `warehouse/` and `models/` of a run).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import polars as pl
from options import add_smoke_option, parsed  # bench/ is the script's folder

from genenv.domains.base import get_domain
from genenv.models.backends import BACKENDS
from genenv.models.loading import resolve_base_model
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.sampling import SamplingSettings
from genenv.pipeline.context import task_from_row
from genenv.warehouse.store import Warehouse

SETTINGS = [(1.0, 1.0), (1.0, 0.9), (0.7, 1.0), (0.7, 0.9), (0.5, 1.0)]
SEEDS, SAMPLES = 24, 6


def main() -> None:
    parser = add_smoke_option(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("data_dir", type=Path, nargs="?", default=Path("data"))
    parser.add_argument("--seeds", type=int, default=SEEDS, help="training seeds sampled")
    parser.add_argument("--samples", type=int, default=SAMPLES, help="answers per seed (a GRPO group)")
    parser.add_argument("--settings", type=int, default=len(SETTINGS), help="the first this many settings")
    args = parsed(parser, seeds=2, samples=2, settings=2)
    data_dir, samples = args.data_dir, args.samples
    warehouse = Warehouse(str(data_dir / "warehouse"))
    run = warehouse.read("runs").sort("created_at")["run_id"][0]
    runs = warehouse.read("runs", run_id=run).row(0, named=True)
    g0 = warehouse.read("generations", run_id=run, generation=0).row(0, named=True)
    base = resolve_base_model(runs["model"], (data_dir / "models").resolve())
    adapters = {role: Path(g0[f"{role}_checkpoint"]) for role in ("agent", "simulator")}
    policy = PolicyPair.load(base, LoraSettings(), adapters=adapters, precision="bfloat16")
    domain = get_domain(runs["domain"])
    pool = warehouse.read("pool", run_id=run, pool="train")["task_id"].to_list()
    seeds = warehouse.read("tasks", run_id=run, generation=0).filter(pl.col("task_id").is_in(pool))
    tasks = [task_from_row(r) for r in random.Random(0).sample(list(seeds.iter_rows(named=True)), args.seeds)]
    backend = BACKENDS["transformers"](policy, batch_size=32)
    conversations = [domain.agent_messages(t) for t in tasks for _ in range(samples)]
    for temperature, top_p in SETTINGS[: args.settings]:
        sampling = SamplingSettings(max_new_tokens=48, temperature=temperature, top_p=top_p, seed=1)
        outputs = backend.generate("agent", conversations, sampling)
        rewards = [domain.verify(c.text, tasks[i // samples]).reward for i, c in enumerate(outputs)]
        groups = [rewards[i * samples : (i + 1) * samples] for i in range(len(tasks))]
        spread = sum(max(g) != min(g) for g in groups) / len(groups)
        success = sum(rewards) / len(rewards)
        print(f"T={temperature} top_p={top_p}: success {success:.2f}, groups with spread {spread:.2f}")
    greedy = backend.generate("agent", [domain.agent_messages(t) for t in tasks], SamplingSettings(48, 0.0))
    solved = sum(domain.verify(c.text, t).reward for c, t in zip(greedy, tasks, strict=True))
    print(f"greedy success {solved / len(tasks):.2f}")


if __name__ == "__main__":
    main()
