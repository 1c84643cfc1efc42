"""Weighted-SFT steps on the embedded SmolLM2 in bfloat16 with training rows padded to a multiple of 1 position (each
micro-batch its own shape) and of 64 (completions of 16: shapes repeat; `ShapeBuckets` in models/cpu/shapes.py, which
`PolicyPair.shape_buckets` holds), alternately.

    python bench/shape_buckets.py [--steps 32] [--rounds 2] [--buckets 1 64] [--model DIR] [--smoke]

PyTorch's CPU kernels keep compiled code per shape, and what a process has cached stays with it, so each run is a
fresh process (`--child BUCKET`): it loads the model, runs `--steps` optimizer steps of 4 rows with the demo
warm start's spread of lengths (prompts of 120-400 tokens, answers of 20-60, drawn with a fixed seed, so both
buckets train on the same rows), and prints its seconds, its peak resident memory above the loaded model, how
much the C heap in use grew over the steps, and the mean loss. The runs alternate; the medians are printed with
their ratios.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import random
import statistics
import subprocess
import sys

from options import add_model_options, base_model, parsed  # bench/ is the script's folder
from rss import measured, memory_ratio


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


def heap_in_use() -> int:
    """Bytes the C heap has handed out and not taken back (glibc's mallinfo2: allocated chunks plus mmapped ones)."""
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


def child(bucket: int, args: argparse.Namespace) -> None:
    from genenv.models.cpu.shapes import ShapeBuckets
    from genenv.models.policy import LoraSettings, PolicyPair
    from genenv.models.rwr import WeightedExample, weighted_sft

    policy = PolicyPair.load(base_model(args), LoraSettings(), precision="bfloat16")
    policy.shape_buckets = ShapeBuckets(positions=bucket, completions=max(bucket // 4, 1))
    steps = args.steps
    rng, vocab = random.Random(0), len(policy.tokenizer)
    examples = [
        WeightedExample(
            [rng.randrange(vocab) for _ in range(rng.randint(120, 400))],
            [rng.randrange(vocab) for _ in range(rng.randint(20, 60))],
            1.0,
        )
        for _ in range(4 * steps)
    ]
    before = heap_in_use()
    records, seconds, extra = measured(
        lambda: weighted_sft(policy, "agent", examples, lr=1e-3, kl_coef=0.0, batch_size=4, persist=False)
    )
    grown = heap_in_use() - before  # after the training block hands free pages back: what stays allocated
    loss = statistics.mean(r["loss"] for r in records)
    print(f"{seconds:.2f} {extra:.0f} {grown / 2**20:.0f} {loss:.6f}")


def run(bucket: int, args: argparse.Namespace) -> tuple[float, float, float, float]:
    command = [sys.executable, __file__, "--child", str(bucket), "--steps", str(args.steps)]
    command += ["--models", str(args.models)]
    command += ["--model", str(args.model)] if args.model else []
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    seconds, extra, grown, loss = (float(v) for v in out.split()[-4:])
    return seconds, extra, grown, loss


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--steps", type=int, default=32, help="optimizer steps of 4 rows (the demo's warm start: 32)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--buckets", type=int, nargs=2, default=[1, 64], metavar=("BEFORE", "AFTER"))
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parsed(parser, steps=1, rounds=1)
    if args.child is not None:
        child(args.child, args)
        return

    print(f"load average {os.getloadavg()[0]:.1f}, bfloat16, {args.steps} SFT steps of 4 rows, {args.rounds} round(s)")
    print(f"{'bucket':>6} {'seconds':>8} {'extra MB':>8} {'heap grew MB':>13} {'mean loss':>10}")
    results: dict[int, list[tuple[float, float, float, float]]] = {b: [] for b in args.buckets}
    for round_ in range(args.rounds):
        for bucket in args.buckets[:: -1 if round_ % 2 else 1]:
            result = run(bucket, args)
            results[bucket].append(result)
            seconds, extra, grown, loss = result
            print(f"{bucket:>6} {seconds:>8.1f} {extra:>8.0f} {grown:>13.0f} {loss:>10.4f}", flush=True)
    before, after = ({k: statistics.median(r[k] for r in results[b]) for k in range(3)} for b in args.buckets)
    print(
        f"padded to {args.buckets[1]} against {args.buckets[0]} (medians): {after[0] / before[0]:.2f}x the time, "
        f"extra memory at the peak {after[1] - before[1]:+.0f} MB ({memory_ratio(after[1], before[1])}), "
        f"heap still in use after the steps {before[2]:.0f} -> {after[2]:.0f} MB"
    )


if __name__ == "__main__":
    main()
