"""Which precision and matmul kernel prefill and decode fastest on this CPU: the question issue 29's scoring time
turns on, since a BFCL pass is two thirds prefill, and the answer differs between machines of one workplace.

    python bench/cpu_kernels.py [--models data/models] [--rounds 3] [--rows 16 --chunk 256 --context 480 --steps 32]
                                [--model DIR] [--smoke]

The embedded SmolLM2 with the agent's (fresh) adapter merged, as generation runs it, in float32 and bfloat16, each
with PyTorch's plain linear layers (MKL in fp32) and with the weights packed for oneDNN as `TransformersBackend`
packs them (`packed_linears`). Prefill: one forward over 16 rows of 256 tokens (a prefill chunk), the last
position's logits only. Decode: 32 greedy one-token steps of 16 rows after 480 prompt tokens (BFCL's median
prompt). Best of `--rounds` interleaved rounds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import torch
from options import add_model_options, base_model, parsed  # bench/ is the script's folder
from transformers import DynamicCache

from genenv.models.cpu.onednn_linears import onednn_supports, packed_linears
from genenv.models.policy import LoraSettings, PolicyPair

ROWS, CHUNK, CONTEXT, STEPS = 16, 256, 480, 32
SMOKE = {"rows": 2, "chunk": 16, "context": 16, "steps": 2, "rounds": 1}


def timed_pass(
    policy: PolicyPair, packed: bool, chunk: torch.Tensor, context: torch.Tensor, steps: int
) -> tuple[float, float]:
    """Seconds of one prefill chunk and of `steps` decoding steps."""
    model = policy.model
    packing = packed_linears(model, policy.compute_dtype) if packed else contextlib.nullcontext()
    with torch.inference_mode(), policy.merged("agent"), policy.autocast(), packing:
        started = time.perf_counter()
        model(chunk, logits_to_keep=1)
        prefill = time.perf_counter() - started
        cache = DynamicCache()
        tokens = model(context, past_key_values=cache, logits_to_keep=1).logits.argmax(-1)
        started = time.perf_counter()
        for _ in range(steps):
            tokens = model(tokens, past_key_values=cache, logits_to_keep=1).logits.argmax(-1)
        return prefill, time.perf_counter() - started


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=ROWS, help="rows of the prefill chunk and of decoding")
    parser.add_argument("--chunk", type=int, default=CHUNK, help="positions of the prefill chunk")
    parser.add_argument("--context", type=int, default=CONTEXT, help="prompt positions before decoding")
    parser.add_argument("--steps", type=int, default=STEPS, help="decoding steps timed")
    args = parsed(parser, **SMOKE)
    folder = base_model(args)
    policies = {name: PolicyPair.load(folder, LoraSettings(), precision=name) for name in ("float32", "bfloat16")}
    high = min(40_000, len(policies["float32"].tokenizer))
    generator = torch.Generator().manual_seed(0)
    chunk = torch.randint(100, high, (args.rows, args.chunk), generator=generator)
    context = torch.randint(100, high, (args.rows, args.context), generator=generator)
    packings = {name: [False, True] if onednn_supports(p.compute_dtype) else [False] for name, p in policies.items()}
    ways = [(name, packed) for name, options in packings.items() for packed in options]
    best = {way: (float("inf"), float("inf")) for way in ways}
    for _ in range(args.rounds):
        for name, packed in ways:
            prefill, decode = timed_pass(policies[name], packed, chunk, context, args.steps)
            best[name, packed] = (min(best[name, packed][0], prefill), min(best[name, packed][1], decode))

    print(
        f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, best of {args.rounds} "
        f"interleaved rounds; prefill {args.rows} x {args.chunk} tokens, decode {args.rows} rows x {args.steps} steps "
        f"after {args.context}"
    )
    for (name, packed), (prefill, decode) in best.items():
        kernel = "packed for oneDNN" if packed else "plain layers"
        print(
            f"{name:9} {kernel:18} prefill {args.rows * args.chunk / prefill:6.0f} tokens/s"
            f"   decode {args.rows * args.steps / decode:5.0f} row-tokens/s"
        )


if __name__ == "__main__":
    main()
