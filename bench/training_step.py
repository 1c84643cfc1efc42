"""Training throughput on the embedded SmolLM2 with LoRA: a GRPO update and a weighted-SFT (RWR) update at each
micro-batch size given (`train_batch_size`), alternately in one run, so the ratios say which size to pick here.

    python bench/training_step.py [--models data/models] [--micro-batches 4,8] [--rounds 2] [--kl 0.0]
                                  [--lengths 120 600] [--model DIR] [--smoke]

Rows have the demo's spread of lengths (tool-call prompts of 120-600 tokens, answers of 8-48), drawn with a
fixed seed. Every update starts from the same adapter and optimizer state; tokens/s counts the real (unpadded)
prompt and completion tokens of the update. GRPO's micro-batch cut changes the summation order, not the loss, so
its losses agree across sizes; weighted SFT steps once per batch, so its losses follow the size.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable

import torch
from options import add_model_options, base_model, parsed  # bench/ is the script's folder

from genenv.models.grpo import GroupSample, grpo_update
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.rwr import WeightedExample, weighted_sft


def rows(
    count: int, k: int, seed: int, vocab: int, lengths: list[int]
) -> tuple[list[GroupSample], list[WeightedExample]]:
    """GRPO groups of k rollouts (shared prompt of `lengths` tokens, answers of 8-48, rewards 0/1) and SFT
    examples."""
    rng = random.Random(seed)
    samples = []
    for group in range(count // k):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(*lengths))]
        for _ in range(k):
            answer = [rng.randrange(vocab) for _ in range(rng.randint(8, 48))]
            samples.append(GroupSample(prompt, answer, float(rng.random() < 0.5), f"g{group}"))
    examples = [
        WeightedExample(
            [rng.randrange(vocab) for _ in range(rng.randint(*lengths))],
            [rng.randrange(vocab) for _ in range(rng.randint(8, 48))],
            rng.uniform(0.5, 2.0),
        )
        for _ in range(count)
    ]
    return samples, examples


def measured(policy: PolicyPair, run: Callable[[], list[float]]) -> tuple[float, list[float]]:
    """Seconds and losses of one update from the saved adapter and optimizer state."""
    state = {n: p.detach().clone() for n, p in policy.model.named_parameters() if "lora_" in n}
    optimizers = dict(policy.optimizer_states)
    started = time.perf_counter()
    losses = run()
    seconds = time.perf_counter() - started
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if name in state:
                param.copy_(state[name])
    policy.optimizer_states = optimizers
    return seconds, losses


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--rows", type=int, default=32, help="GRPO rollouts and SFT examples")
    parser.add_argument("--micro-batches", default="4,8", help="train_batch_size values (the demo's: 4)")
    parser.add_argument("--minibatch", type=int, default=16, help="agent_minibatch_size")
    parser.add_argument("--kl", type=float, default=0.0, help="agent_kl_coef (the demo's: 0)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lengths", type=int, nargs=2, default=[120, 600], help="prompt tokens, fewest and most")
    args = parsed(parser, rows=8, micro_batches="2,4", minibatch=4, rounds=1, lengths=[8, 16])
    sizes = [int(size) for size in args.micro_batches.split(",")]

    policy = PolicyPair.load(base_model(args), LoraSettings())
    samples, examples = rows(args.rows, 4, 0, policy.tokenizer.vocab_size, args.lengths)
    tokens = {
        "grpo": sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples),
        "sft": sum(len(e.prompt_ids) + len(e.target_ids) for e in examples),
    }
    lr = 1e-4

    def grpo(micro: int) -> list[float]:
        records = grpo_update(
            policy, "agent", samples, lr=lr, kl_coef=args.kl, minibatch_size=args.minibatch, micro_batch_size=micro
        )
        return [r["loss"] for r in records]

    def sft(micro: int) -> list[float]:
        records = weighted_sft(policy, "simulator", examples, lr=lr, kl_coef=0.0, persist=False, batch_size=micro)
        return [r["loss"] for r in records]

    updates = {"grpo": grpo, "sft": sft}
    times: dict[tuple[str, int], list[float]] = {(kind, size): [] for kind in updates for size in sizes}
    losses: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):
        for kind, size in times:
            seconds, losses[kind, size] = measured(policy, lambda u=updates[kind], m=size: u(m))
            times[kind, size].append(seconds)
    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, rounds {args.rounds}")
    print(
        f"GRPO: {args.rows} rollouts ({tokens['grpo']} tokens), minibatch {args.minibatch}, kl {args.kl} | "
        f"SFT: {args.rows} examples ({tokens['sft']} tokens)"
    )
    for kind in updates:
        speeds = {size: tokens[kind] / statistics.median(times[kind, size]) for size in sizes}
        first = speeds[sizes[0]]
        cells = " | ".join(
            f"micro-batch {size}: {speed:5.0f} tok/s {speed / first:.2f}x" for size, speed in speeds.items()
        )
        print(f"{kind.upper():<5} {cells}")
        for size in sizes:  # SFT's batch is its optimizer step, so its step count and losses follow the size
            print(f"      losses at {size}: {', '.join(f'{loss:.5f}' for loss in losses[kind, size])}")


if __name__ == "__main__":
    main()
