"""float32 against bfloat16 on this machine: one weighted-SFT step and one sampled generation on the embedded
SmolLM2 with LoRA, each precision in turn, the order reversed every round, so the ratios come from one run.

    python bench/precision.py [--models data/models] [--rows 8] [--prompt-tokens 300] [--new-tokens 32]
                              [--rounds 2] [--model DIR] [--smoke]

bfloat16 halves the weights' memory traffic, which pays where the CPU computes it natively (AVX-512 with
oneDNN's bf16 kernels, AMX); elsewhere every bf16 matmul is converted in software. Prints each precision's seconds
a row, the bf16/fp32 ratio of both, and what `precision: auto` resolves to here (models/precision.py).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch
from options import add_model_options, base_model, parsed  # bench/ is the script's folder

from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.precision import native_bfloat16, resolve_precision
from genenv.models.rwr import WeightedExample, weighted_sft
from genenv.models.sampling import SamplingSettings
from genenv.models.transformers_backend import TransformersBackend


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--rows", type=int, default=8, help="SFT examples and generated answers a round")
    parser.add_argument("--prompt-tokens", type=int, default=300)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    args = parsed(parser, rows=2, prompt_tokens=8, new_tokens=2, rounds=1)

    rng = random.Random(0)
    policies = {p: PolicyPair.load(base_model(args), LoraSettings(), precision=p) for p in ("float32", "bfloat16")}
    vocab = policies["float32"].tokenizer.vocab_size
    words = [rng.randrange(vocab) for _ in range(args.prompt_tokens)]
    examples = [WeightedExample(words, [rng.randrange(vocab) for _ in range(30)], 1.0) for _ in range(args.rows)]
    prompt = policies["float32"].tokenizer.decode(words)
    conversations = [[{"role": "user", "content": f"{i}: {prompt}"}] for i in range(args.rows)]
    sampling = SamplingSettings(max_new_tokens=args.new_tokens, temperature=1.0, seed=0)

    def train(policy: PolicyPair) -> None:
        weighted_sft(policy, "agent", examples, lr=1e-4, kl_coef=0.0, persist=False, batch_size=args.rows)

    def generate(policy: PolicyPair) -> None:
        TransformersBackend(policy).generate("agent", conversations, sampling)

    seconds: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        order = list(policies) if round_ % 2 == 0 else list(reversed(policies))
        for precision in order:
            for name, work in (("train", train), ("generate", generate)):
                start = time.perf_counter()
                work(policies[precision])
                seconds.setdefault((name, precision), []).append((time.perf_counter() - start) / args.rows)

    print(f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}, ", end="")
    print(f"native bf16 {native_bfloat16()}, precision auto -> {resolve_precision('auto')}, rounds {args.rounds}")
    for name in ("train", "generate"):
        fp32, bf16 = (statistics.median(seconds[name, p]) for p in ("float32", "bfloat16"))
        print(f"{name:<9} float32 {fp32:7.3f} s/row | bfloat16 {bf16:7.3f} s/row | bf16/fp32 {bf16 / fp32:5.2f}x")


if __name__ == "__main__":
    main()
