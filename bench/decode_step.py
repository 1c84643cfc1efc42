"""Where a decoding step's time goes on the embedded SmolLM2 (the agent's adapter merged and the weights packed, as
generation runs it), against the machine's roofline measured in the same run.

    python bench/decode_step.py [--models data/models] [--precision float32|bfloat16] [--rows 1 8 16 32 64]
                                [--model DIR] [--smoke]

For each batch width: one forward pass of one new token per row over a KV cache of about 60 positions (a
quarter of the rows left-padded, so attention takes a mask, as in generation), the median of `--steps`; then the
same step's matmuls alone (every linear layer, the output layer included, on inputs of that width); the rest is
attention, the KV cache, norms, rotary embeddings and Python. The roofline of a step is the longer of streaming
every weight once (at the machine's measured weight-reading rate) and its FLOPs at the matmul GFLOP/s.
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

import torch
from generation_batching import matmul_gflops  # bench/ is the script's folder
from options import add_model_options, base_model, parsed

from genenv.models.cpu.kv_cache import DecodingCache
from genenv.models.cpu.onednn_linears import PackedLinear, base_linears, onednn_supports, packed_linears
from genenv.models.policy import LoraSettings, PolicyPair, cache_argument

PROMPT = 48


def weight_read_gbs(dtype: torch.dtype, megabytes: int = 256) -> float:
    """Best GB/s of a one-row matmul over a weight far larger than the caches, plain or packed as generation
    packs it: how fast decoding can stream weights here."""
    weight = torch.randn(megabytes * 2**20 // (torch.finfo(dtype).bits // 8) // 4096, 4096).to(dtype)
    row = torch.randn(1, 4096).to(dtype)
    kernels = [lambda: torch.nn.functional.linear(row, weight)]
    if onednn_supports(dtype):
        kernels.append(partial(PackedLinear(weight), row))
    seconds = min(_seconds(kernel) for kernel in kernels for _ in range(5))
    return weight.numel() * weight.element_size() / seconds / 1e9


def _seconds(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def step_seconds(policy: PolicyPair, rows: int, steps: int) -> float:
    """Median seconds of a decoding step of `rows` rows after a prompt of PROMPT positions."""
    generator = torch.Generator().manual_seed(rows)
    ids = torch.randint(100, min(40_000, len(policy.tokenizer)), (rows, PROMPT), generator=generator)
    mask = torch.ones(rows, PROMPT, dtype=torch.long)
    mask[: rows // 4, :5] = 0
    model = policy.model.get_base_model()
    kv_cache = DecodingCache()
    cache = {cache_argument(policy.model): kv_cache}
    logits = model(input_ids=ids, attention_mask=mask, logits_to_keep=1, **cache).logits
    times = []
    for _ in range(steps):
        mask = torch.cat([mask, torch.ones(rows, 1, dtype=torch.long)], dim=1)
        started = time.perf_counter()
        logits = model(
            input_ids=logits[:, -1].argmax(-1, keepdim=True),
            attention_mask=mask,
            logits_to_keep=1,
            **cache,
        ).logits
        times.append(time.perf_counter() - started)
    if kv_cache.get_seq_length() != PROMPT + steps:
        raise RuntimeError(f"the model did not extend the KV cache: {kv_cache.get_seq_length()} positions")
    return median(times)


def matmul_seconds(linears: list[torch.nn.Linear], rows: int, repeats: int = 5) -> float:
    """Median seconds of one step's linear layers alone (packed, when called inside `packed_linears`), each on a
    `rows`-row input of its weight's dtype."""
    inputs = {m.in_features: torch.randn(rows, m.in_features) for m in linears}

    def one_step() -> None:
        for m in linears:
            m(inputs[m.in_features].to(m.weight.dtype))

    one_step()
    return median([_seconds(one_step) for _ in range(repeats)])


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--precision", choices=("float32", "bfloat16"), default="bfloat16")
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 8, 16, 32, 64])
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--weight-mb", type=int, default=256, help="the weight streamed to measure reading speed")
    args = parsed(parser, rows=[2], steps=2, weight_mb=4)

    policy = PolicyPair.load(base_model(args), LoraSettings(), precision=args.precision)
    dtype = getattr(torch, args.precision)
    seconds = 0.05 if args.smoke else 1.0
    gflops, gbs = matmul_gflops(dtype, seconds, 64 if args.smoke else 1024), weight_read_gbs(dtype, args.weight_mb)
    with (
        policy.merged("agent"),
        packed_linears(policy.model, policy.compute_dtype),
        torch.inference_mode(),
        policy.autocast(),
    ):
        model = policy.model.get_base_model()
        model.eval()
        linears = base_linears(model)
        weight_bytes = sum(m.weight.numel() * m.weight.element_size() for m in linears)
        flop_per_row = 2 * sum(m.weight.numel() for m in linears)
        print(
            f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, {args.precision}: "
            f"matmul {gflops:.0f} GFLOP/s, weights read at {gbs:.1f} GB/s; "
            f"{weight_bytes / 1e6:.0f} MB of linear weights, {flop_per_row / 1e9:.2f} GFLOP per row"
        )
        print("rows   step ms   tok/s  matmuls ms (GFLOP/s)  rest ms  roofline ms  step/roofline")
        for rows in args.rows:
            step, matmuls = step_seconds(policy, rows, args.steps), matmul_seconds(linears, rows)
            roofline = max(weight_bytes / (gbs * 1e9), rows * flop_per_row / (gflops * 1e9))
            print(
                f"{rows:4d} {1e3 * step:9.1f} {rows / step:7.0f} {1e3 * matmuls:11.1f} "
                f"({rows * flop_per_row / matmuls / 1e9:5.0f}) {1e3 * (step - matmuls):11.1f} "
                f"{1e3 * roofline:12.1f} {step / roofline:11.1f}x"
            )


if __name__ == "__main__":
    main()
