"""How much slower is our fixed work beside a busy core? The same work (a sampled decode of the agent's answers to
`--prompts` questions, then one GRPO step on them, then a greedy scoring pass over `--scored` prompts, in a fresh
process each time) runs alone and beside a neighbour that spins on one core (`taskset -c 1 nice -n N python -c
"while True: pass"`) at nice 10 and at nice 0, for each thread setting asked for; each setting runs in its own
process because OpenMP reads its environment when it starts.

    python bench/contention.py [--settings adaptive,fixed,passive,spin10k,spin1k,one-thread] [--prompts 32]
        [--scored 32] [--beside alone,nice10,nice0] [--repeats 1] [--timeout 600] [--smoke --model DIR]
    python bench/contention.py --overhead ROUNDS [--scored 32]    # the governor's own cost alone, on and off in turn

Settings: adaptive (the product's default: the thread count follows the machine, models/cpu/threads.py); fixed
(PyTorch's count throughout, the default before adaptive); and, each with the count fixed, passive
(OMP_WAIT_POLICY=PASSIVE: threads sleep at once between parallel regions), spin10k, spin1k (GOMP_SPINCOUNT=10000,
1000: libgomp's threads spin 30x, 300x less than its default 300000 before sleeping), one-thread (OMP_NUM_THREADS=1).
A run that takes longer than --timeout seconds is stopped and shows as "stopped". Prints each run's seconds by phase
(and, adaptive, how often the count changed and where it ended) and each setting's ratio to the first setting alone:
with a neighbour at nice 10 the free cycles are about 1.9 cores, at nice 0 about 1.5 (the neighbour gets half of its
core), so ratios near 1.05 and 1.33 are what the cycles allow.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from options import add_model_options, base_model, parsed  # bench/ is the script's folder

from genenv.models.precision import resolve_precision

SETTINGS = {
    "adaptive": {},
    "fixed": {},
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "spin10k": {"GOMP_SPINCOUNT": "10000"},
    "spin1k": {"GOMP_SPINCOUNT": "1000"},
    "one-thread": {"OMP_NUM_THREADS": "1"},
}
NEIGHBOURS = {"alone": None, "nice10": 10, "nice0": 0}
QUESTIONS = [
    "What is the capital of France?",
    "Name a primary color.",
    "What is 12 times 7?",
    "Give a synonym for happy.",
    "Which planet is closest to the sun?",
    "What does a thermometer measure?",
    "Who wrote Romeo and Juliet?",
    "How many days are in a leap year?",
]


def work(model: Path, prompts: int, scored: int, tokens: int, precision: str, adaptive: bool) -> dict[str, float]:
    """The fixed work, timed by phase: decode (sampled), a GRPO step on those answers, a greedy scoring pass."""
    import torch

    from genenv.models.cpu.threads import process_governor
    from genenv.models.grpo import GroupSample, grpo_update
    from genenv.models.policy import LoraSettings, PolicyPair
    from genenv.models.sampling import SamplingSettings
    from genenv.models.transformers_backend import TransformersBackend

    if not adaptive:  # the count PyTorch chose stays: the governor steps aside where OMP_NUM_THREADS is set
        os.environ.setdefault("OMP_NUM_THREADS", str(torch.get_num_threads()))
    policy = PolicyPair.load(model, LoraSettings(), precision=precision)
    backend = TransformersBackend(policy)
    ask = [[{"role": "user", "content": f"{QUESTIONS[i % len(QUESTIONS)]} ({i})"}] for i in range(max(prompts, scored))]
    seconds = {}
    started = time.perf_counter()
    answers = backend.generate("agent", ask[:prompts], SamplingSettings(tokens, 1.0, 1.0, seed=0))
    seconds["decode"] = time.perf_counter() - started
    samples = [
        GroupSample(a.prompt_ids, a.completion_ids, float(i % 2), group=str(i // 4)) for i, a in enumerate(answers)
    ]
    started = time.perf_counter()
    grpo_update(policy, "agent", samples, lr=1e-5, kl_coef=0.0, minibatch_size=len(samples), micro_batch_size=8)
    seconds["grpo step"] = time.perf_counter() - started
    started = time.perf_counter()
    backend.generate("agent", ask[:scored], SamplingSettings(tokens, 0.0))
    seconds["scoring"] = time.perf_counter() - started
    if adaptive:
        seconds |= {"changes": float(process_governor().changes), "threads": float(torch.get_num_threads())}
    return seconds


def overhead(model: Path, scored: int, tokens: int, precision: str, rounds: int) -> None:
    """The governor's own cost on a quiet machine, where it never changes the count: one process, the greedy scoring
    pass with its hook on and off in alternating order, so a drift of the machine's speed hits both alike."""
    import statistics

    from genenv.models.cpu.threads import process_governor
    from genenv.models.policy import LoraSettings, PolicyPair
    from genenv.models.sampling import SamplingSettings
    from genenv.models.transformers_backend import TransformersBackend

    policy = PolicyPair.load(model, LoraSettings(), precision=precision)
    backend = TransformersBackend(policy)
    hooks = policy.model.get_input_embeddings()._forward_pre_hooks  # private: how the bench takes the hook off
    governed = dict(hooks)
    if not governed:
        raise SystemExit("no governor on this model (OMP_NUM_THREADS set, or no /proc/pressure/cpu)")
    ask = [[{"role": "user", "content": f"{QUESTIONS[i % len(QUESTIONS)]} ({i})"}] for i in range(scored)]
    seconds: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(rounds):
        for on in (True, False) if round_ % 2 == 0 else (False, True):
            hooks.clear()
            hooks.update(governed if on else {})
            started = time.perf_counter()
            backend.generate("agent", ask, SamplingSettings(tokens, 0.0))
            seconds[on].append(time.perf_counter() - started)
    for on in (True, False):
        print(f"governor {'on ' if on else 'off'} " + " ".join(f"{x:.2f}" for x in seconds[on]))
    paired = statistics.median(a / b for a, b in zip(seconds[True], seconds[False], strict=True))
    print(
        f"governor on/off: median of the {rounds} rounds' ratios {paired:.3f} (each round both, back to back; "
        f"the count changed {process_governor().changes} times)"
    )


def neighbour(niceness: int | None) -> subprocess.Popen | None:
    """A process spinning on core 1 at `niceness`, in its own process group (stopped by its id)."""
    if niceness is None:
        return None
    spin = [sys.executable, "-c", "while True: pass"]
    command = ["taskset", "-c", "1", "nice", "-n", str(niceness), *spin]
    return subprocess.Popen(command, start_new_session=True)


def timed_run(args: argparse.Namespace, setting: str, niceness: int | None) -> dict[str, float]:
    """One worker process with `setting`'s environment, beside the neighbour at `niceness` (None: alone)."""
    env = {k: v for k, v in os.environ.items() if k not in {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS"}}
    env |= SETTINGS[setting]
    command = [
        sys.executable,
        __file__,
        "--worker",
        "--model",
        str(base_model(args)),
        "--prompts",
        str(args.prompts),
        "--scored",
        str(args.scored),
        "--tokens",
        str(args.tokens),
        "--precision",
        args.precision,
        *(["--adaptive"] if setting == "adaptive" else []),
    ]
    spinning = neighbour(niceness)
    try:
        time.sleep(0.5 if spinning else 0)  # the neighbour is running before the work starts
        started = time.perf_counter()
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return {"total": math.inf}
        total = time.perf_counter() - started
    finally:
        if spinning is not None:
            os.killpg(spinning.pid, 15)
            spinning.wait()
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "total": total}


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"any of {','.join(SETTINGS)}")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--scored", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--beside", default=",".join(NEIGHBOURS), help=f"any of {','.join(NEIGHBOURS)}")
    parser.add_argument("--precision", default="auto", choices=("auto", "bfloat16", "float32"))
    parser.add_argument("--timeout", type=float, default=600, help="seconds a run may take before it is stopped")
    parser.add_argument("--overhead", type=int, metavar="ROUNDS", help="only the governor's cost alone, in one process")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--adaptive", action="store_true", help=argparse.SUPPRESS)
    args = parsed(
        parser, settings="adaptive", beside="alone,nice0", prompts=2, scored=2, tokens=4, repeats=1, precision="float32"
    )
    if args.overhead:
        overhead(base_model(args), args.scored, args.tokens, resolve_precision(args.precision), args.overhead)
        return
    if args.worker:
        print(
            json.dumps(
                work(
                    args.model, args.prompts, args.scored, args.tokens, resolve_precision(args.precision), args.adaptive
                )
            )
        )
        return
    settings, beside = args.settings.split(","), args.beside.split(",")
    unknown = (set(settings) - set(SETTINGS)) | (set(beside) - set(NEIGHBOURS))
    if unknown or beside[0] != "alone":
        parser.error(f"settings from {', '.join(SETTINGS)}; --beside from {', '.join(NEIGHBOURS)}, alone first")
    runs: dict[tuple[str, str], list[float]] = {}
    for repeat in range(args.repeats):
        for setting in settings:  # interleaved, so a drift of the machine's speed hits every cell alike
            for where in beside:
                seconds = timed_run(args, setting, NEIGHBOURS[where])
                runs.setdefault((setting, where), []).append(seconds["total"])
                phases = " ".join(
                    f"{k} {v:g}" if k in ("changes", "threads") else f"{k} {v:.1f}" for k, v in seconds.items()
                )
                print(f"round {repeat} {setting:10s} {where:8s} {phases}", flush=True)
    baseline = min(runs[(settings[0], "alone")])
    precision = resolve_precision(args.precision)
    print(f"best total seconds, and its ratio to {settings[0]} alone ({baseline:.1f} s), in {precision}:")
    for setting in settings:
        cells = [_cell(where, min(runs[(setting, where)]), baseline) for where in beside]
        print(f"{setting:10s} " + " | ".join(cells))


def _cell(where: str, seconds: float, baseline: float) -> str:
    return f"{where} stopped" if math.isinf(seconds) else f"{where} {seconds:.1f} s ({seconds / baseline:.2f}x)"


if __name__ == "__main__":
    main()
