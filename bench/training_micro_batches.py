"""The demo's agent warm start (tool_call seeds in BFCL's prompt, 4-row steps) with training micro-batches cut after
the shared system prompt (`PolicyPair.micro_batches`) against the cut by whole lengths it replaced, in one process.

    python bench/training_micro_batches.py [--models data/models] [--rows 32] [--rounds 2] [--model DIR] [--smoke]

Each round trains a fresh adapter over the same `--rows` seeds once each way, in alternating order; prints how the
steps were cut, the median seconds of each way, their ratio and the mean losses.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence

from options import add_model_options, base_model, parsed  # bench/ is the script's folder

from genenv.domains.base import get_domain
from genenv.models.policy import LoraSettings, PolicyPair, length_batches, median_budget
from genenv.models.rwr import encode_example, weighted_sft

BATCH = 4


def whole_lengths(prompts: Sequence[Sequence[int]], lengths: Sequence[int], rows: int) -> list[list[int]]:
    """The cut before: whole lengths, a budget of `rows` median-length rows."""
    return length_batches(lengths, median_budget(lengths, rows))


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    args = parsed(parser, rows=6, rounds=1)

    model = base_model(args)
    domain = get_domain("tool_call")
    seeds = random.Random(0).sample(domain.load_seeds(), args.rows)
    cuts = {"after the shared prefix": None, "whole lengths (before)": whole_lengths}
    seconds: dict[str, list[float]] = {name: [] for name in cuts}
    losses: dict[str, list[float]] = {name: [] for name in cuts}
    for round_ in range(args.rounds):
        for name in list(cuts) if round_ % 2 == 0 else list(cuts)[::-1]:
            policy = PolicyPair.load(model, LoraSettings(), precision="bfloat16")
            examples = [encode_example(policy.tokenizer, m, r) for s in seeds for m, r in domain.demonstrations(s)]
            cut = cuts[name] or policy.micro_batches
            splits: list[str] = []

            # The cuts weighted_sft makes, recorded as it makes them.
            def recorded(prompts, lengths, rows, cut=cut, splits=splits):
                batches = cut(prompts, lengths, rows)
                splits.append("+".join(str(len(b)) for b in batches))
                return batches

            policy.micro_batches = recorded
            started = time.perf_counter()
            records = weighted_sft(policy, "agent", examples, lr=1e-3, kl_coef=0.0, persist=False, batch_size=BATCH)
            seconds[name].append(time.perf_counter() - started)
            losses[name].append(statistics.mean(r["nll"] for r in records))
            if round_ == 0:
                print(f"{name}: steps cut {' '.join(splits)}")
    for name in cuts:
        print(f"  {name:24s} {statistics.median(seconds[name]):6.1f} s  mean loss {statistics.mean(losses[name]):.4f}")
    new, old = (statistics.median(seconds[name]) for name in cuts)
    print(f"  cut after the shared prefix: {old / new:.2f}x faster")


if __name__ == "__main__":
    main()
