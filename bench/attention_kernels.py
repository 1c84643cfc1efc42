"""PyTorch's CPU attention kernel against grouped matmuls, at the shapes BFCL scoring gives the embedded SmolLM2.

    python bench/attention_kernels.py [--precision bfloat16|float32] [--repeat 10] [--smoke]

SmolLM2-135M has 9 query heads over 3 key/value heads of 64. For each shape (rows, query positions, key positions),
a quarter of the rows left-padded as in generation: PyTorch's kernel through transformers' `sdpa_attention_forward`
(keys repeated for a prefill chunk, queries grouped per key head for a one-token step), and the same attention as two
grouped matmuls with the softmax in fp32, which never copies the keys. Prints each one's milliseconds (median of
`--repeat`) and its largest error against the grouped matmuls in float64.
"""

from __future__ import annotations

import argparse
import os
import statistics
import timeit
from functools import partial

import torch
from options import add_smoke_option, parsed  # bench/ is the script's folder
from transformers.integrations.sdpa_attention import sdpa_attention_forward

HEADS, KV_HEADS, HEAD_DIM = 9, 3, 64
SHAPES = ((18, 190, 444), (5, 256, 510), (16, 1, 500), (16, 1, 700))
"""(rows, query positions, key positions): two prefill chunks after the shared system prompt, two decoding steps."""


def grouped(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """softmax(q·kᵀ/√d)·v with each key head's queries in one matmul; `allowed` is (rows, 1, queries, keys)."""
    rows, heads, queries, dim = query.shape
    groups = heads // key.shape[1]
    scores = torch.matmul(query.reshape(rows, key.shape[1], groups * queries, dim), key.transpose(-1, -2))
    scores = scores.to(torch.promote_types(scores.dtype, torch.float32)) * dim**-0.5
    scores = scores.view(rows, key.shape[1], groups, queries, -1)
    probabilities = torch.softmax(scores.masked_fill(~allowed[:, :, None], float("-inf")), -1)
    probabilities = probabilities.to(value.dtype).view(rows, key.shape[1], groups * queries, -1)
    return torch.matmul(probabilities, value).view(rows, heads, queries, dim)


class _GroupedQueryAttention(torch.nn.Module):
    """What `sdpa_attention_forward` reads of a Llama attention layer."""

    num_key_value_groups = HEADS // KV_HEADS
    is_causal = True


def kernel(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """The flash kernel through transformers' own sdpa integration, as the model's layers call it."""
    output, _ = sdpa_attention_forward(_GroupedQueryAttention(), query, key, value, allowed, scaling=HEAD_DIM**-0.5)
    return output.transpose(1, 2)


def milliseconds(function, repeat: int = 10) -> float:
    """Median of `repeat` calls after a warm-up call."""
    function()
    return 1e3 * statistics.median(timeit.repeat(function, number=1, repeat=repeat))


def main() -> None:
    parser = add_smoke_option(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--precision", choices=("bfloat16", "float32"), default="bfloat16")
    parser.add_argument("--repeat", type=int, default=10, help="calls timed per shape and way")
    args = parsed(parser, repeat=1)
    shapes = [(2, 4, 8), (2, 1, 8)] if args.smoke else SHAPES
    dtype = getattr(torch, args.precision)
    generator = torch.Generator().manual_seed(0)
    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, {args.precision}")
    print("rows queries keys   kernel ms  grouped ms  speed-up   kernel error  grouped error")
    for rows, queries, keys in shapes:
        query, key, value = (
            torch.randn(rows, heads, length, HEAD_DIM, generator=generator).to(dtype)
            for heads, length in ((HEADS, queries), (KV_HEADS, keys), (KV_HEADS, keys))
        )
        padding = torch.zeros(rows, keys, dtype=torch.bool)
        padding[: rows // 4, :40] = True
        causal = torch.ones(queries, keys, dtype=torch.bool).tril(keys - queries)
        allowed = (causal[None] & ~padding[:, None])[:, None]
        inputs = (query, key, value, allowed)
        exact = grouped(query.double(), key.double(), value.double(), allowed)
        errors = [(f(*inputs).double() - exact).abs().max().item() for f in (kernel, grouped)]
        kernel_ms, grouped_ms = (milliseconds(partial(f, *inputs), args.repeat) for f in (kernel, grouped))
        print(
            f"{rows:4d} {queries:7d} {keys:4d} {kernel_ms:11.2f} {grouped_ms:11.2f} {kernel_ms / grouped_ms:8.2f}x "
            f"{errors[0]:14.1e} {errors[1]:14.1e}"
        )


if __name__ == "__main__":
    main()
