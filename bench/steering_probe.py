"""Does a run's simulator steer on its own domain? The generation-0 agent stays fixed; the untrained simulator
(generation 0's, warm-started only) and the generation-N simulator each write one task per prompt from the same
prompts with the same sampling seeds. The prompts are N's kind: seeds drawn from D_train, each with its family's hint
from the generation-0 agent's rollouts of generation 1 (the run-wide held-out rate where a family has too few). Every
valid task gets `--rollouts` answers of the generation-0 agent at the run's sampling settings, for its p̂.

Printed per simulator: the valid share, the band share (|p̂ - α| <= k_min, among valid tasks), the mean |p̂ - α| and
p̂, each with a 95% bootstrap interval, and the trained-minus-untrained differences of the shares over the same
prompts (paired). The goal of issue 46: by generation 8 the trained simulator's band share lies beyond the untrained
one's interval.

    python bench/steering_probe.py WAREHOUSE RUN_ID [--generation N] [--prompts 48] [--rollouts 8] [--models DIR]

A local warehouse folder (the adapters are read from its _checkpoints).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

import polars as pl

from genenv.curriculum.pools import draw
from genenv.domains.base import ValidationContext, get_domain
from genenv.domains.decontamination import domain_index
from genenv.evaluation.bootstrap import bootstrap_mean
from genenv.models.loading import resolve_base_model
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.sampling import SamplingSettings
from genenv.models.transformers_backend import TransformersBackend
from genenv.pipeline.context import task_from_row
from genenv.tasks.answers import judge
from genenv.warehouse.checkpoints import fetch_adapter
from genenv.warehouse.purposes import Purpose
from genenv.warehouse.store import Warehouse

PROBE_SEED = 4242
"""The sampling seed both simulators write with, and the agent's rollouts'."""
FAMILY_ROLLOUTS = 4
"""Fewest generation-1 rollouts of a family that make its hint."""


def interval(values: list[float]) -> str:
    if not values:
        return "-"
    i = bootstrap_mean(values)
    return f"{i.value:.3f} [{i.low:.3f}, {i.high:.3f}] of {i.n}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("warehouse")
    parser.add_argument("run_id")
    parser.add_argument("--generation", type=int, help="the trained simulator's generation (default: the last)")
    parser.add_argument("--prompts", type=int, default=48)
    parser.add_argument("--rollouts", type=int, default=8)
    parser.add_argument("--models", type=Path, help="model cache folder (default: the run's)")
    args = parser.parse_args()
    warehouse = Warehouse(args.warehouse)
    config = warehouse.run_config(args.run_id)
    domain = get_domain(config.domain, config)
    committed = warehouse.committed(args.run_id).sort("generation")
    last = args.generation if args.generation is not None else committed["generation"].max()
    rows = warehouse.read("tasks", run_id=args.run_id).filter(pl.col("valid"), pl.col("generation") < last)
    known = {row["task_id"]: task_from_row(row) for row in rows.iter_rows(named=True)}
    pool = warehouse.read("pool", run_id=args.run_id).filter(pool="train").filter(pl.col("generation") < last)
    seeds = draw([known[t] for t in sorted(pool["task_id"]) if t in known], args.prompts, random.Random(PROBE_SEED))
    hints = family_hints(warehouse, args.run_id, known, committed)
    prompts = [
        domain.simulator_messages(s, hints.get(s.family, hints[None]), config.alpha, config.k_min) for s in seeds
    ]
    heldout = rows.filter(pl.col("heldout"))
    context = ValidationContext(
        seen_keys={domain.dedup_key(t) for t in known.values()},
        is_contaminated=domain_index(domain, config.benchmarks_dir).contains,
        heldout_calls={domain.answer_key(known[t]) for t in heldout["task_id"] if t in known},
    )
    adapters = committed.select("agent_checkpoint", "simulator_checkpoint").rows()
    checkpoint = dict(zip(committed["generation"], adapters, strict=True))
    base = resolve_base_model(config.model, args.models or config.models_dir)
    lora = LoraSettings.of(config)
    simulator_sampling = SamplingSettings(
        config.simulator_max_new_tokens, config.simulator_temperature, config.simulator_top_p, PROBE_SEED
    )
    agent_sampling = SamplingSettings(
        config.agent_max_new_tokens, config.agent_temperature, config.agent_top_p, PROBE_SEED
    )
    outcomes = {}
    with tempfile.TemporaryDirectory() as cache:
        agent = fetch_adapter(checkpoint[0][0], Path(cache))
        for generation in (0, last):
            simulator = fetch_adapter(checkpoint[generation][1], Path(cache))
            policy = PolicyPair.load(base, lora, {"agent": agent, "simulator": simulator}, precision=config.precision)
            backend = TransformersBackend(policy, batch_size=config.generation_batch_size)
            written = backend.generate("simulator", prompts, simulator_sampling)
            tasks = []
            for i, (seed, completion) in enumerate(zip(seeds, written, strict=True)):
                candidate = domain.parse_candidate(completion.text, seed, f"probe/{i}", not completion.finished)
                candidate = domain.validate(candidate, context)
                tasks.append(candidate.task if candidate.valid else None)
            valid = [t for t in tasks if t is not None]
            answers = backend.generate(
                "agent", [domain.agent_messages(t) for t in valid for _ in range(args.rollouts)], agent_sampling
            )
            solved = [
                judge(domain, t, a.text, a.finished).reward >= config.solved_threshold
                for t, a in zip([t for t in valid for _ in range(args.rollouts)], answers, strict=True)
            ]
            k = args.rollouts
            p_hats = iter(sum(solved[i : i + k]) / k for i in range(0, len(solved), k))
            outcomes[generation] = [None if t is None else next(p_hats) for t in tasks]
    for generation, p_hats in outcomes.items():
        scored = [p for p in p_hats if p is not None]
        distance = [abs(p - config.alpha) for p in scored]
        print(
            f"g{generation} simulator: valid {interval([float(p is not None) for p in p_hats])} | band "
            f"{interval([float(d <= config.k_min + 1e-12) for d in distance])} | |p̂-α| {interval(distance)} | "
            f"p̂ {interval(scored)}"
        )
    in_band = {
        g: [float(p is not None and abs(p - config.alpha) <= config.k_min + 1e-12) for p in v]
        for g, v in outcomes.items()
    }
    moved = [a - b for a, b in zip(in_band[last], in_band[0], strict=True)]
    print(f"g{last} - g0, paired over {len(prompts)} prompts: valid and in band {interval(moved)}")


def family_hints(warehouse: Warehouse, run_id: str, known: dict, committed: pl.DataFrame) -> dict:
    """family -> the generation-0 agent's success in generation 1's sampled rollouts; None -> its held-out rate."""
    metrics = json.loads(committed.filter(generation=0)["metrics"][0])
    hints = {None: metrics.get("heldout_success")}
    rows = warehouse.read("trajectories", run_id=run_id, generation=1)
    rows = rows.filter(pl.col("purpose").is_in([Purpose.FRESH, Purpose.POOL]))
    by_family: dict[str, list[float]] = {}
    for task_id, solved in rows.select("task_id", "solved").iter_rows():
        if task_id in known:
            by_family.setdefault(known[task_id].family, []).append(float(solved))
    hints |= {family: sum(v) / len(v) for family, v in by_family.items() if len(v) >= FAMILY_ROLLOUTS}
    return hints


if __name__ == "__main__":
    main()
