"""Greedy generation on the embedded SmolLM2 with a LoRA adapter active: one conversation at a time versus
token-sized batches, against the compute bound of this machine measured in the same run.

    python bench/generation_batching.py [--models data/models] [--conversations 32] [--batch-size 16]
                                        [--precision float32|bfloat16] [--model DIR] [--smoke]

Prints, from one run of interleaved rounds, the best round of each (absolute speeds drift with the machine's
load; the ratios are the result):
- the machine's matmul GFLOP/s (at --precision, on the torch threads generation uses; the faster of two kernels)
  and the model's FLOP per token;
- two earlier paths with the same decoding, their tokens/s and whether their greedy tokens equal generation's:
  before the merge (the PEFT adapter applied on every token) and before packed weights (merged, plain layers);
- generation as it runs (merged, packed weights): sequential and batched (`--batch-size` rows of the longest
  prompt, rows joining as others finish) tok/s, their ratio, and batched tok/s as a share of the compute bound;
  then the same share counting
  the prompt tokens it prefills too (short answers to long prompts: most FLOPs are prefill; the tokens the
  prompts share are computed once), but not the steps of rows that have ended and wait to leave the cache.
The agent's adapter gets small random B weights (seeded), so it changes the answers and the merge matters.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from functools import partial

import torch
from options import add_model_options, base_model, parsed  # bench/ is the script's folder

from genenv.models.cpu.onednn_linears import PackedLinear, base_linears, onednn_supports
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.sampling import Completion, SamplingSettings, encode_prompt
from genenv.models.transformers_backend import TransformersBackend

QUESTIONS = [
    "What is the capital of France?",
    "Name a primary color.",
    "What is 12 times 7?",
    "Give one synonym for happy.",
    "Which planet is closest to the sun?",
    "What does a thermometer measure?",
    "Translate 'thank you' into Spanish.",
    "What is the boiling point of water in Celsius?",
    "Name a mammal that can fly.",
    "How many days are in a leap year?",
    "What gas do plants absorb from the air?",
    "Who wrote Romeo and Juliet?",
    "What is the largest ocean on Earth?",
    "Spell the word 'necessary' backwards.",
    "What is the square root of 81?",
    "Call the weather tool for Paris as [get_weather(city=...)].",
]
CONTEXTS = ["", "Answer briefly. ", "You are a careful assistant; think about units and names first. "]


def matmul_gflops(dtype: torch.dtype, seconds: float = 1.0, size: int = 1024) -> float:
    """Best GFLOP/s of square matmuls over a few rounds, the faster of PyTorch's matmul and oneDNN's on a packed
    weight (generation's kernel; in fp32 on AMD CPUs, MKL's matmul runs at half its speed): the machine's compute
    bound, as loaded now."""
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    kernels = [lambda: torch.mm(a, b)]
    if onednn_supports(dtype):
        kernels.append(partial(PackedLinear(b, rows=size), a))
    best = 0.0
    for kernel in kernels:
        kernel()
        for _ in range(3):
            count, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds / 3:
                kernel()
                count += 1
            best = max(best, 2 * size**3 * count / (time.perf_counter() - started) / 1e9)
    return best


def prefilled_tokens(policy: PolicyPair, run: Callable[[], list[Completion]]) -> int:
    """The prompt tokens the model's forward passes compute in `run()` (shared tokens once): those of its passes
    over more than one position, as a decoding step takes one per row."""
    counted = []
    hook = policy.model.get_base_model().register_forward_pre_hook(
        lambda module, args, kwargs: counted.append(kwargs["input_ids"].shape), with_kwargs=True
    )
    try:
        run()
    finally:
        hook.remove()
    return sum(rows * width for rows, width in counted if width > 1)


def timed(function: Callable[[], list[Completion]]) -> tuple[list[Completion], float]:
    """The completions and their tokens per second."""
    started = time.perf_counter()
    completions = function()
    return completions, sum(len(c.completion_ids) for c in completions) / (time.perf_counter() - started)


def unpacked_path(
    policy: PolicyPair, conversations: list[list[dict[str, str]]], sampling: SamplingSettings, rows: int, merged: bool
) -> list[Completion]:
    """Generation with plain linear layers (no packed weights), reimplemented: the same decoding, with the adapter
    merged or (before the merge) the PEFT adapter applied on every token."""
    backend = TransformersBackend(policy, rows)
    prompts = [encode_prompt(policy.tokenizer, c) for c in conversations]
    policy.activate("agent")
    policy.model.eval()
    with policy.merged("agent") if merged else nullcontext(), torch.inference_mode(), policy.autocast():
        generated = backend.decode(prompts, sampling, progress=None)
    return backend.completions(prompts, generated)


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--conversations", type=int, default=32)
    parser.add_argument("--sequential", type=int, default=8, help="conversations generated one at a time")
    parser.add_argument("--batch-size", type=int, default=16, help="rows of a median-length batch")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--precision", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument("--rounds", type=int, default=3)
    args = parsed(parser, conversations=4, sequential=2, batch_size=2, max_new_tokens=4, rounds=1)

    policy = PolicyPair.load(base_model(args), LoraSettings(), precision=args.precision)
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for name, param in policy.model.named_parameters():
            if "lora_B.agent." in name:
                param.normal_(0.0, 0.02)
    sampling = SamplingSettings(max_new_tokens=args.max_new_tokens, temperature=0)
    conversations = [
        [{"role": "user", "content": CONTEXTS[i // len(QUESTIONS) % len(CONTEXTS)] + QUESTIONS[i % len(QUESTIONS)]}]
        for i in range(args.conversations)
    ]
    # the matmuls: embedding lookups are not (bf16 stores the output layer apart)
    flop_per_token = 2 * sum(m.weight.numel() for m in base_linears(policy.model))
    backend = TransformersBackend(policy, args.batch_size)
    backend.generate("agent", conversations[:2], sampling)  # warm-up

    dtype = getattr(torch, args.precision)
    runs: dict[str, Callable[[], list[Completion]]] = {
        "previous": lambda: unpacked_path(policy, conversations, sampling, args.batch_size, merged=False),
        "plain layers": lambda: unpacked_path(policy, conversations, sampling, args.batch_size, merged=True),
        "sequential": lambda: [backend.generate("agent", [c], sampling)[0] for c in conversations[: args.sequential]],
        "batched": lambda: backend.generate("agent", conversations, sampling),
    }
    speeds: dict[str, list[float]] = {name: [] for name in runs}
    outputs: dict[str, list[Completion]] = {}
    gflops = 0.0
    for round_ in range(args.rounds):  # interleaved, in alternating order; the best round of each is the least
        gflops = max(gflops, matmul_gflops(dtype, *((0.05, 64) if args.smoke else ())))  # disturbed by other work
        for name in list(runs)[:: -1 if round_ % 2 else 1]:
            outputs[name], speed = timed(runs[name])
            speeds[name].append(speed)
    old, plain, sequential, batched = (outputs[name] for name in runs)
    old_speed, plain_speed, sequential_speed, batched_speed = (max(speeds[name]) for name in runs)
    bound = gflops * 1e9 / flop_per_token

    def identical(a: list[Completion], b: list[Completion]) -> int:
        return sum(x.completion_ids == y.completion_ids for x, y in zip(a, b[: len(a)], strict=True))

    same, same_plain, same_single = identical(old, batched), identical(plain, batched), identical(sequential, batched)
    widest = max(len(b) for b in backend.batches([list(c.prompt_ids) for c in batched], args.max_new_tokens))
    print(
        f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, {args.precision}, "
        f"best of {args.rounds} interleaved rounds (tok/s per round: "
        + "; ".join(f"{name} {', '.join(f'{v:.0f}' for v in values)}" for name, values in speeds.items())
        + ")"
    )
    print(
        f"{args.precision} matmul {gflops:.0f} GFLOP/s; model {flop_per_token / 1e9:.2f} GFLOP/token "
        f"-> bound {bound:.0f} tok/s"
    )
    print(f"example: {conversations[0][0]['content']!r} -> {batched[0].text!r}")
    print(f"{args.conversations} conversations, up to {widest} rows decoding at once")
    print(
        f"previous path (adapter per token) {old_speed:.1f} tok/s; "
        f"greedy tokens identical to the merged path: {same}/{len(batched)}"
    )
    print(
        f"merged, plain linear layers {plain_speed:.1f} tok/s; greedy tokens identical to packed weights: "
        f"{same_plain}/{len(batched)}"
    )
    print(f"sequential (merged) identical to batched: {same_single}/{len(sequential)}")
    print(
        f"sequential {sequential_speed:.1f} tok/s | batched {batched_speed:.1f} tok/s | "
        f"ratio {batched_speed / sequential_speed:.1f}x | {batched_speed / old_speed:.2f}x the previous path | "
        f"{batched_speed / plain_speed:.2f}x plain layers | "
        f"{100 * batched_speed / bound:.0f}% of the compute bound"
    )
    prompt_tokens = sum(len(c.prompt_ids) for c in batched)
    generated = sum(len(c.completion_ids) for c in batched)
    prefilled = prefilled_tokens(policy, runs["batched"])
    useful = prefilled + generated - len(batched)  # a row's first token comes with its prompt's prefill
    print(
        f"the prompts are {prompt_tokens} tokens ({prefilled} prefilled: shared tokens once) to the answers' "
        f"{generated}: counting the prompt tokens it computes, batched generation uses "
        f"{100 * batched_speed * useful / generated / bound:.0f}% of the compute bound"
    )


if __name__ == "__main__":
    main()
