"""Weighted-SFT steps on the embedded SmolLM2 in bfloat16 with training rows padded to a multiple of 1 position (each
micro-batch its own shape) and of `models/policy.py SHAPE_STEP` (64, completions COMPLETION_STEP: shapes
repeat), alternately.

    python bench/shape_buckets.py [--steps 32] [--rounds 2] [--buckets 1 64]

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
from pathlib import Path

from rss import measured  # bench/ is the script's folder


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


def child(bucket: int, steps: int, models: Path) -> None:
    import genenv.models.policy as policy_module
    from genenv.models.loading import EMBEDDED_MODEL, resolve_base_model
    from genenv.models.policy import LoraSettings, PolicyPair
    from genenv.models.rwr import WeightedExample, weighted_sft

    policy_module.SHAPE_STEP = bucket
    policy_module.COMPLETION_STEP = max(bucket // 4, 1)
    policy = PolicyPair.load(resolve_base_model(EMBEDDED_MODEL, models), LoraSettings(), precision="bfloat16")
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


def run(bucket: int, steps: int, models: Path) -> tuple[float, float, float, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(bucket), "--steps", str(steps), "--models", str(models)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    seconds, extra, grown, loss = (float(v) for v in out.split()[-4:])
    return seconds, extra, grown, loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=Path("data") / "models", help="model cache folder")
    parser.add_argument("--steps", type=int, default=32, help="optimizer steps of 4 rows (the demo's warm start: 32)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--buckets", type=int, nargs=2, default=[1, 64], metavar=("BEFORE", "AFTER"))
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.steps, args.models)
        return

    print(f"load average {os.getloadavg()[0]:.1f}, bfloat16, {args.steps} SFT steps of 4 rows, {args.rounds} round(s)")
    print(f"{'bucket':>6} {'seconds':>8} {'extra MB':>8} {'heap grew MB':>13} {'mean loss':>10}")
    results: dict[int, list[tuple[float, float, float, float]]] = {b: [] for b in args.buckets}
    for round_ in range(args.rounds):
        for bucket in args.buckets[:: -1 if round_ % 2 else 1]:
            result = run(bucket, args.steps, args.models)
            results[bucket].append(result)
            seconds, extra, grown, loss = result
            print(f"{bucket:>6} {seconds:>8.1f} {extra:>8.0f} {grown:>13.0f} {loss:>10.4f}", flush=True)
    before, after = ({k: statistics.median(r[k] for r in results[b]) for k in range(3)} for b in args.buckets)
    print(
        f"padded to {args.buckets[1]} against {args.buckets[0]} (medians): {after[0] / before[0]:.2f}x the time, "
        f"extra memory at the peak {after[1] - before[1]:+.0f} MB ({after[1] / before[1]:.2f}x), "
        f"heap still in use after the steps {before[2]:.0f} -> {after[2]:.0f} MB"
    )


if __name__ == "__main__":
    main()
