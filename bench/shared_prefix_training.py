"""Warm-start SFT steps on the embedded SmolLM2 over tool_call seeds in BFCL's prompt, with the rows' common system
prompt computed once per micro-batch (`PolicyPair.shared_prefix`) against each row computing it, in one process.

    python bench/shared_prefix_training.py [--models data/models] [--rows 8] [--rounds 3] [--precision bfloat16]
                                           [--model DIR] [--smoke]

Each round runs one `weighted_sft` step (forward, backward, AdamW) over the same `--rows` seeds in each way, in
alternating order, from the same adapter; prints the median seconds of each, their ratio, and both losses.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from options import add_model_options, base_model, parsed  # bench/ is the script's folder

from genenv.domains.base import get_domain
from genenv.models.policy import MIN_SHARED_PREFIX, LoraSettings, PolicyPair
from genenv.models.rwr import encode_example, weighted_sft


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--precision", default="bfloat16")
    args = parsed(parser, rows=2, rounds=1)

    policy = PolicyPair.load(base_model(args), LoraSettings(), precision=args.precision)
    domain = get_domain("tool_call")
    seeds = domain.load_seeds()[: args.rows]
    examples = [encode_example(policy.tokenizer, m, reply) for s in seeds for m, reply in domain.demonstrations(s)]
    prompts = [e.prompt_ids for e in examples]
    shared = policy.shared_prefix(prompts)
    print(
        f"torch threads {torch.get_num_threads()}, {args.precision}, {len(examples)} rows, prompt tokens median "
        f"{statistics.median(map(len, prompts)):.0f}, shared {shared}"
    )
    ways = ("shared prefix", "every row whole")
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    losses: dict[str, float] = {}
    for round_ in range(args.rounds + 1):  # round 0 warms up
        for name in list(ways)[:: -1 if round_ % 2 else 1]:
            policy.optimizer_states.clear()
            policy.min_shared_prefix = MIN_SHARED_PREFIX if name == "shared prefix" else 10**9
            started = time.perf_counter()
            [record] = weighted_sft(policy, "agent", examples, lr=0.0, kl_coef=0.0, batch_size=len(examples))
            if round_:
                seconds[name].append(time.perf_counter() - started)
            losses[name] = record["loss"]
    for name, times in seconds.items():
        print(f"  {name:18s} {statistics.median(times):6.2f} s  loss {losses[name]:.5f}  (rounds: {times})")
    whole, shared_s = (statistics.median(seconds[n]) for n in ("every row whole", "shared prefix"))
    print(f"  shared prefix {whole / shared_s:.2f}x faster")


if __name__ == "__main__":
    main()
