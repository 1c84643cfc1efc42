"""A weighted-SFT step on the embedded SmolLM2 with each target token's log-prob gathered from the whole
log-softmax (the previous way) versus `completion_token_logprobs` (a few positions at a time), side by side.

    python bench/token_logprobs.py [--models data/models] [--rows 3] [--prompt 150] [--target 250]
                                   [--precision float32|bfloat16] [--rounds 3] [--model DIR] [--smoke]

One micro-batch of `--rows` examples (random token ids, seeded) per step, KL 0, from the same adapter each round;
the ways alternate. Printed per way: the best round's seconds and extra resident memory, and the step's loss and
gradient norm, which must be equal: the new way is bit-identical.
"""

from __future__ import annotations

import argparse
import functools
import os
import random

import torch
from options import add_model_options, base_model, parsed  # bench/ is the script's folder
from rss import measured

from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.rwr import WeightedExample, weighted_sft


def gathered(policy: PolicyPair, prompts, completions) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The previous way: the [B, C, V] log-softmax, then the target tokens and the entropy from it."""
    log_probs, targets, mask = policy.completion_logprobs(prompts, completions)
    with torch.no_grad():
        entropy = -(log_probs.exp() * log_probs).sum(-1)
    return log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1), entropy, mask


def sft_step(policy: PolicyPair, examples: list[WeightedExample]) -> list[dict]:
    return weighted_sft(policy, "agent", examples, lr=1e-4, kl_coef=0.0, batch_size=len(examples), persist=False)


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--rows", type=int, default=3)
    parser.add_argument("--prompt", type=int, default=150, help="prompt tokens per row")
    parser.add_argument("--target", type=int, default=250, help="target tokens per row")
    parser.add_argument("--precision", choices=("float32", "bfloat16"), default="bfloat16")
    parser.add_argument("--rounds", type=int, default=3)
    args = parsed(parser, rows=2, prompt=8, target=8, rounds=1)

    policy = PolicyPair.load(base_model(args), LoraSettings(), precision=args.precision)
    rng = random.Random(0)
    vocab = policy.tokenizer.vocab_size
    examples = [
        WeightedExample(
            [rng.randrange(vocab) for _ in range(args.prompt)], [rng.randrange(vocab) for _ in range(args.target)], 1.0
        )
        for _ in range(args.rows)
    ]
    adapter = {n: p.detach().clone() for n, p in policy.model.named_parameters() if p.requires_grad}
    ways = {"whole log-softmax": lambda *a: gathered(policy, *a), "token log-probs": policy.completion_token_logprobs}
    results: dict[str, list[tuple[float, float, dict]]] = {name: [] for name in ways}
    for round_ in range(args.rounds):
        for name in list(ways)[:: -1 if round_ % 2 else 1]:
            with torch.no_grad():
                for n, p in policy.model.named_parameters():
                    if n in adapter:
                        p.copy_(adapter[n])
            policy.completion_token_logprobs = ways[name]
            records, seconds, extra = measured(functools.partial(sft_step, policy, examples))
            results[name].append((seconds, extra, records[0]))
    del policy.completion_token_logprobs

    tokens = args.rows * (args.prompt + args.target)
    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, {args.precision}, ", end="")
    print(f"one step of {args.rows} rows x ({args.prompt} + {args.target}) = {tokens} tokens, best of {args.rounds}")
    best = {}
    for name, runs in results.items():
        seconds, extra = min(r[0] for r in runs), min(r[1] for r in runs)
        record = runs[-1][2]
        best[name] = (seconds, extra)
        print(f"{name:<18} {seconds:5.2f} s  extra memory {extra:6.0f} MB  ", end="")
        print(f"loss {record['loss']:.6f}  grad norm {record['grad_norm']:.6f}")
    (old_s, old_mb), (new_s, new_mb) = best.values()
    print(f"token log-probs: {old_s / new_s:.2f}x faster, {old_mb - new_mb:.0f} MB less extra memory")


if __name__ == "__main__":
    main()
