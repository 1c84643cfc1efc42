"""Where one BFCL scoring pass spends its time: tokenising, prefill, decode, the checker, the warehouse writes.

    python bench/eval_profile.py [--warehouse data/after/warehouse --run RUN --generation G] [--category simple_python]
                                 [--items 400] [--batch-size 16] [--precision P] [--cache data]
                                 [--vllm-python .venv-vllm/bin/python] [--model DIR] [--smoke]

Scores `--items` items of one BFCL category greedily with BFCL's prompt, as `genenv eval` does (transformers
backend, the run's agent adapter and precision, or `--precision`; without `--run`, the embedded base model in
bf16), and prints each part's seconds, the prompt tokens (total, shared by every prompt, prefilled), and the
prefill and decode rates. Prefill is every forward over prompt columns (the shared system prompt once, then each
prompt's rest), decode every one-token step of the running rows; both are timed around the model call, so the rest
of `decode` (sampling, bookkeeping, cache moves) is the remainder of the generate time. The warehouse writes go
to a scratch folder.

With `--vllm-python`, the same items are then scored again on the vllm backend by that interpreter (`.venv-vllm`,
after this pass has ended, so the two never share the cores), and both passes are printed side by side: engine
start, generate time, seconds an item, accuracy, and on how many items the two backends' verdicts agree.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import torch
from options import add_smoke_option, parsed  # bench/ is the script's folder

from genenv.evaluation.benchmark_registry import select_items
from genenv.evaluation.bfcl import Bfcl
from genenv.evaluation.runner import ItemResult
from genenv.models.loading import EMBEDDED_MODEL
from genenv.models.policy import PRECISIONS, shared_prefix_length
from genenv.models.sampling import GenerationBackend, SamplingSettings, encode_prompt
from genenv.models.transformers_backend import TransformersBackend
from genenv.runtime.handle import model_runtime
from genenv.tasks.benchmarks import Target, evaluation_rows, resolve_target, scoring_backend
from genenv.warehouse.store import Warehouse


def timed(backend: TransformersBackend) -> tuple[dict[str, float], dict[str, int]]:
    """Count the seconds and columns of the backend's prefill passes and decode steps (this instance only)."""
    seconds: dict[str, float] = defaultdict(float)
    tokens: dict[str, int] = defaultdict(int)
    prefill, step = backend.prefill, backend.step

    def timed_prefill(kv_cache, input_ids, attention, start=0):
        began = time.perf_counter()
        logits = prefill(kv_cache, input_ids, attention, start)
        seconds["prefill"] += time.perf_counter() - began
        tokens["prefill"] += int(attention[:, start:].sum())
        return logits

    def timed_step(rows, sampling):
        began = time.perf_counter()
        next_tokens = step(rows, sampling)
        seconds["decode"] += time.perf_counter() - began
        tokens["decode"] += len(rows.rows)
        return next_tokens

    backend.prefill, backend.step = timed_prefill, timed_step
    return seconds, tokens


def vllm_pass(args: argparse.Namespace) -> dict:
    """Time `generate` of the same items on the vllm backend in this interpreter (one engine start included in
    "load model": the CPU build compiles the model there); the verdicts per item for the side-by-side count."""
    items, target = chosen(args)
    target = dataclasses.replace(target, backend="vllm")
    with model_runtime() as runtime:
        started = time.perf_counter()
        backend = scoring_backend(runtime, target, args.cache, args.batch_size)
        backend.generate("agent", [items[0].messages], SamplingSettings(max_new_tokens=1, temperature=0.0))
        load = time.perf_counter() - started
        generate, completions = timed_generate(backend, items)
    verdicts = {
        item.item_id: Bfcl().score(item, c.text).scores["accuracy"] for item, c in zip(items, completions, strict=True)
    }
    return {"load model": load, "generate": generate, "verdicts": verdicts}


def chosen(args: argparse.Namespace) -> tuple[list, Target]:
    items = select_items(Bfcl().load(None), {args.category: args.items}, limit=0)
    model = str(args.model) if args.model else EMBEDDED_MODEL
    target = (
        resolve_target(Warehouse(args.warehouse), model, args.run, args.generation, None)
        if args.run
        else Target(model, precision="bfloat16")
    )
    return items, dataclasses.replace(target, backend="transformers", precision=args.precision or target.precision)


def timed_generate(backend: GenerationBackend, items: list) -> tuple[float, list]:
    sampling = SamplingSettings(max_new_tokens=Bfcl.max_new_tokens, temperature=0.0)
    started = time.perf_counter()
    completions = backend.generate("agent", [item.messages for item in items], sampling)
    return time.perf_counter() - started, completions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", default="data/warehouse")
    parser.add_argument("--run", help="score this run's agent (default: the embedded base model)")
    parser.add_argument("--generation", type=int, help="the run's generation (default: its last committed one)")
    parser.add_argument("--category", default="simple_python")
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=16, help="generation_batch_size, as genenv eval's")
    parser.add_argument("--precision", choices=PRECISIONS, help="score in this precision instead of the run's")
    parser.add_argument("--cache", default="data", help="data folder holding the converted model (data/models)")
    parser.add_argument("--vllm-python", help="then score the same items on the vllm backend with this interpreter")
    parser.add_argument("--vllm-pass", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help="a model folder to score instead of the embedded SmolLM2")
    args = parsed(add_smoke_option(parser), items=2)
    if args.vllm_pass:
        print(json.dumps(vllm_pass(args)))
        return

    parts: dict[str, float] = {}
    started = time.perf_counter()
    items, target = chosen(args)
    benchmark = Bfcl()
    parts["load items"] = time.perf_counter() - started
    with model_runtime() as runtime:
        started = time.perf_counter()
        backend = scoring_backend(runtime, target, args.cache, args.batch_size)
        assert isinstance(backend, TransformersBackend)
        parts["load model"] = time.perf_counter() - started
        started = time.perf_counter()
        prompts = [encode_prompt(backend.policy.tokenizer, item.messages) for item in items]
        parts["tokenise"] = time.perf_counter() - started
        seconds, tokens = timed(backend)
        generate, completions = timed_generate(backend, items)
    parts["prefill"] = seconds["prefill"]
    parts["decode"] = seconds["decode"]
    parts["rest of generate (tokenise again, sampling, cache moves)"] = generate - parts["prefill"] - parts["decode"]

    started = time.perf_counter()
    results = []
    for item, completion in zip(items, completions, strict=True):
        score = benchmark.score(item, completion.text)
        results.append(ItemResult("bfcl", item.category, item.item_id, completion.text, score.scores, score.error))
    parts["checker"] = time.perf_counter() - started

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        warehouse = Warehouse(str(Path(scratch) / "warehouse"))
        rows, item_rows = evaluation_rows(target, "profile/bfcl/", results)
        warehouse.append("evaluation_items", item_rows)
        warehouse.append("evaluations", rows)
    parts["warehouse writes"] = time.perf_counter() - started

    total = sum(parts.values())
    shared = shared_prefix_length(list({tuple(p) for p in prompts}))
    generated = sum(len(c.completion_ids) for c in completions)
    accuracy = sum(r.scores["accuracy"] for r in results) / len(results)
    print(
        f"{len(items)} {args.category} items, {target.run_id} g{target.generation}, {target.precision}, batch "
        f"{args.batch_size}, torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"accuracy {accuracy:.3f}; {total:.1f} s in all, {total / len(items):.2f} s an item")
    print(f"{'part':<58} {'seconds':>8} {'share':>6}")
    for name, seconds in parts.items():
        print(f"{name:<58} {seconds:8.1f} {seconds / total:6.1%}")
    print(
        f"prompt tokens {sum(map(len, prompts))} (median {sorted(map(len, prompts))[len(prompts) // 2]}, "
        f"{shared} shared by all); prefilled {tokens['prefill']} at "
        f"{tokens['prefill'] / max(parts['prefill'], 1e-9):.1f} tokens/s"
    )
    print(
        f"generated {generated} tokens; decode steps computed {tokens['decode']} row-tokens at "
        f"{tokens['decode'] / max(parts['decode'], 1e-9):.1f} tokens/s"
    )
    if args.vllm_python:
        side_by_side(args, parts, generate, {r.item_id: r.scores["accuracy"] for r in results})


def side_by_side(args: argparse.Namespace, parts: dict[str, float], generate: float, verdicts: dict) -> None:
    """The same pass on the vllm backend, run by `--vllm-python` once this one has ended, beside this one."""
    command = [args.vllm_python, *sys.argv, "--vllm-pass"]
    finished = subprocess.run(command, capture_output=True, text=True, check=False)
    if finished.returncode != 0:
        raise SystemExit(f"the vllm pass failed ({' '.join(command)}):\n{finished.stderr[-3000:]}")
    other = json.loads(finished.stdout.strip().splitlines()[-1])
    n = len(verdicts)
    print(f"{'backend':<14} {'load model s':>12} {'generate s':>11} {'s an item':>10} {'accuracy':>9}")
    for name, load, seconds, scores in (
        ("transformers", parts["load model"], generate, verdicts),
        ("vllm", other["load model"], other["generate"], other["verdicts"]),
    ):
        print(f"{name:<14} {load:12.1f} {seconds:11.1f} {seconds / n:10.2f} {sum(scores.values()) / n:9.3f}")
    same = sum(verdicts[i] == other["verdicts"][i] for i in verdicts)
    print(f"vllm / transformers generate time {other['generate'] / generate:.2f}x; same verdict on {same} of {n} items")


if __name__ == "__main__":
    main()
