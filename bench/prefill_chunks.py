"""Long, left-padded prompts on the embedded SmolLM2: the prompts' forward pass in one piece versus in chunks
(`TransformersBackend(prefill_chunk=...)`), time and extra memory side by side in one run.

    python bench/prefill_chunks.py [--models data/models] [--prompts 16] [--chunk 256]
                                   [--precision float32|bfloat16] [--rounds 2] [--lengths 900 1200] [--new-tokens 32]
                                   [--model DIR] [--smoke]

Prompts are random token ids of 900 to 1,200 tokens (`--lengths`, seeded), one batch of `--prompts` rows, 32 greedy
tokens each (`--new-tokens`): the shape of the held-out evaluation's and the simulator's long prompts, where left
padding makes attention take an explicit mask. Each way runs `--rounds` times, interleaved; printed per way: the
best round's seconds, the extra resident memory of its batch over the memory before it (the C heap's free pages are
handed back before each run, so one run's leftovers do not hide the next one's peak), and how many greedy answers
the two ways share.
"""

from __future__ import annotations

import argparse
import os
import random

import torch
from options import add_model_options, base_model, parsed  # bench/ is the script's folder
from rss import measured, memory_ratio

from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.sampling import SamplingSettings
from genenv.models.transformers_backend import TransformersBackend


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument("--precision", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lengths", type=int, nargs=2, default=[900, 1200], metavar=("FEWEST", "MOST"))
    parser.add_argument("--new-tokens", type=int, default=32)
    args = parsed(parser, prompts=2, chunk=16, rounds=1, lengths=[30, 40], new_tokens=2)

    policy = PolicyPair.load(base_model(args), LoraSettings(), precision=args.precision)
    rng = random.Random(0)
    vocab = policy.tokenizer.vocab_size
    prompts = [[rng.randrange(vocab) for _ in range(rng.randint(*args.lengths))] for _ in range(args.prompts)]
    sampling = SamplingSettings(max_new_tokens=args.new_tokens, temperature=0)
    ways = {"one pass": None, f"chunks of {args.chunk}": args.chunk}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    answers: dict[str, list[list[int]]] = {}
    for round_ in range(args.rounds):
        for name in list(ways)[:: -1 if round_ % 2 else 1]:
            backend = TransformersBackend(policy, args.prompts, prefill_chunk=ways[name])
            with policy.merged("agent"), torch.inference_mode(), policy.autocast():
                outputs, seconds, extra = measured(lambda b=backend: b.decode(prompts, sampling, progress=None))
            answers[name] = outputs
            results[name].append((seconds, extra))

    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, {args.precision}, ", end="")
    fewest, most = args.lengths
    print(f"{args.prompts} prompts of {fewest}-{most} tokens, {args.new_tokens} greedy tokens, ", end="")
    print(f"best of {args.rounds} interleaved rounds")
    best = {name: min(runs) for name, runs in results.items()}
    for name, (seconds, extra) in best.items():
        print(f"{name:<16} {seconds:6.1f} s  extra memory {extra:6.0f} MB")
    (whole, whole_mb), (chunked, chunked_mb) = best.values()
    shared = sum(a == b for a, b in zip(*answers.values(), strict=True))
    print(f"chunked: {whole / chunked:.2f}x faster, {memory_ratio(chunked_mb, whole_mb)} the extra memory; ", end="")
    print(f"identical greedy answers {shared}/{args.prompts}")


if __name__ == "__main__":
    main()
