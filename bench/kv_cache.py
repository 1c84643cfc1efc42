"""Decoding steps over transformers' dynamic KV cache (each layer concatenated at every step) against generation's
`DecodingCache` (layers appending into reserved columns), on the embedded SmolLM2 as generation runs it.

    python bench/kv_cache.py [--models data/models] [--precision float32|bfloat16] [--shapes 16x48 16x300 ...]
                             [--model DIR] [--smoke]

For each shape (rows x prompt columns): a prefill, then `--steps` greedy decoding steps; the median step of each
cache, taken in alternating order over `--rounds`, their ratio, and whether the greedy tokens are identical.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from options import add_model_options, base_model, parsed  # bench/ is the script's folder
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from genenv.models.cpu.kv_cache import DecodingCache
from genenv.models.cpu.onednn_linears import packed_linears
from genenv.models.policy import LoraSettings, PolicyPair, cache_argument


class ConcatenatingCache(DecodingCache):
    """The cache before reserved columns: `DecodingCache` with transformers' concatenating layers."""

    def __init__(self) -> None:
        super().__init__()
        self.layer_class_to_replicate = DynamicLayer


def decode(policy: PolicyPair, cache: DynamicCache, rows: int, prompt: int, steps: int) -> tuple[float, torch.Tensor]:
    """(median seconds of a step, the greedy tokens) after a prompt of `prompt` columns, a quarter of the rows
    left-padded."""
    model = policy.model.get_base_model()
    high = min(40_000, len(policy.tokenizer))
    ids = torch.randint(100, high, (rows, prompt), generator=torch.Generator().manual_seed(rows + prompt))
    mask = torch.ones(rows, prompt, dtype=torch.long)
    mask[: rows // 4, : prompt // 8] = 0
    argument = {cache_argument(policy.model): cache}
    logits = model(input_ids=ids, attention_mask=mask, logits_to_keep=1, **argument).logits
    times, tokens = [], []
    for _ in range(steps):
        mask = torch.cat([mask, torch.ones(rows, 1, dtype=torch.long)], dim=1)
        started = time.perf_counter()
        tokens.append(logits[:, -1].float().argmax(-1, keepdim=True))
        logits = model(input_ids=tokens[-1], attention_mask=mask, logits_to_keep=1, **argument).logits
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2], torch.cat(tokens, dim=1)


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--precision", choices=("float32", "bfloat16"), default="bfloat16")
    parser.add_argument("--shapes", nargs="+", default=["16x48", "16x300", "32x300", "16x800"])
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    args = parsed(parser, shapes=["2x16"], steps=2, rounds=1)

    policy = PolicyPair.load(base_model(args), LoraSettings(), precision=args.precision)
    caches = {"concatenated": ConcatenatingCache, "reserved columns": DecodingCache}
    print(
        f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, {args.precision}, "
        f"{args.steps} steps, median step, best of {args.rounds} interleaved rounds"
    )
    print("rows x prompt   concatenated ms   reserved columns ms   speed-up   identical greedy tokens")
    with (
        policy.merged("agent"),
        packed_linears(policy.model, policy.compute_dtype),
        torch.inference_mode(),
        policy.autocast(),
    ):
        policy.model.eval()
        for shape in args.shapes:
            rows, prompt = (int(n) for n in shape.split("x"))
            seconds: dict[str, list[float]] = {name: [] for name in caches}
            tokens = {}
            for round_ in range(args.rounds):
                for name in list(caches)[:: -1 if round_ % 2 else 1]:
                    step, tokens[name] = decode(policy, caches[name](), rows, prompt, args.steps)
                    seconds[name].append(step)
            before, after = (min(seconds[name]) for name in caches)
            same = torch.equal(*tokens.values())
            print(f"{shape:>13} {1e3 * before:17.1f} {1e3 * after:21.1f} {before / after:9.2f}x   {same}")


if __name__ == "__main__":
    main()
