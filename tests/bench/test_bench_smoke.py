"""Every benchmark script in its smoke mode (bench/options.py), so a refactor cannot break one unnoticed: each runs
its whole path at tiny sizes on the tiny model and must print its result line. The Python scripts run in this
process (they share the suite's imports: seconds each, not a Python start each); those that spawn processes or start
Ray run as their own process. The shell scripts print the genenv commands they
would run, and each is parsed by genenv's own parser, its --set fields checked against the config.

bench/steering.py and bench/gpu_smoke.py have tests of their own (test_steering_bench.py, test_gpu_smoke.py);
bench/steering_probe.py and bench/mean_of_categories.py have no smoke mode yet."""

from __future__ import annotations

import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.workers import ONE_RAY

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
ELSEWHERE = {"steering.py", "gpu_smoke.py", "steering_probe.py", "mean_of_categories.py"}
"""Scripts whose checks live elsewhere (see the module docstring)."""
OWN_PROCESS = {"contention.py", "onednn_cache.py", "scale_out.py", "shape_buckets.py"}
"""Scripts that start processes or a Ray cluster: a process of their own."""
SLOW = {"onednn_cache.py", "scale_out.py", "stage_overhead.py", "sampling_spread.py"}
"""A flow run on the tiny model, or a Ray cluster: with the slow tests."""
FLOW = {"onednn_cache.py", "stage_overhead.py"}
"""Scripts that run the evolve flow: on the session's Prefect server."""
RAY = {"scale_out.py"}
"""Scripts that start a Ray cluster: in the worker that runs the other Ray tests."""

MODEL = ["--smoke", "--model", "{model}"]
SCRIPTS: dict[str, tuple[list[str], str]] = {
    "answer_check.py": (
        ["--warehouse", "{synthetic}"],
        r"^after the answer check: \d+ kept(.|\n)*^  kept out of D_train: \d+, correct \d+",
    ),
    "attention_kernels.py": (["--smoke"], r"^\s+2\s+1\s+8\s+[\d.]+\s+[\d.]+\s+[\d.]+x"),
    "contention.py": (MODEL, r"^adaptive\s+alone [\d.]+ s \(1\.00x\) \| nice0 [\d.]+ s \([\d.]+x\)$"),
    "continuous_batching.py": (MODEL, r"rows joining alone [\d.]+x; identical greedy answers to whole batches \d/2"),
    "cpu_kernels.py": (MODEL, r"^bfloat16\s+plain layers\s+prefill\s+\d+ tokens/s"),
    "decode_step.py": (MODEL, r"^\s+2\s+[\d.]+\s+\d+\s+[\d.]+ \(\s*\d+\)"),
    "eval_profile.py": ([*MODEL, "--cache", "{tmp}"], r"^prefill\s+[\d.]+\s+[\d.]+%"),
    "generation_batching.py": (MODEL, r"^sequential [\d.]+ tok/s \| batched [\d.]+ tok/s"),
    "heldout_paired.py": (["{synthetic}", "--smoke"], r"^demo g0 -> g2: \d+ held-out tasks"),
    "label_sample.py": (
        ["--warehouse", "{synthetic}", "--run", "demo", "--generations", "1-2", "--count", "3", "--out", "{tmp}/s"],
        r"^3 of the \d+ valid simulator tasks of generations \[1, 2\] -> ",
    ),
    "kv_cache.py": (MODEL, r"^\s+2x16\s+[\d.]+\s+[\d.]+\s+[\d.]+x\s+(True|False)"),
    "onednn_cache.py": (MODEL, r"^\s+16\s+[\d.]+\s+\d+\s+\d+$"),
    "onednn_training.py": (MODEL, r"LoRA gradients' largest relative difference"),
    "prefill_chunks.py": (MODEL, r"identical greedy answers \d/2"),
    "precision.py": (MODEL, r"^train\s+float32\s+[\d.]+ s/row \| bfloat16\s+[\d.]+ s/row \| bf16/fp32\s+[\d.]+x"),
    "rescore_bfcl.py": (["--warehouse", "{evaluations}"], r"^\| scored \| 1 \| simple_python \| 2 \|"),
    "sampling_spread.py": (["{data}", "--smoke"], r"^greedy success [\d.]+"),
    "scale_out.py": (MODEL, r"2 data-parallel workers / 1 worker: [\d.]+x"),
    "shape_buckets.py": (MODEL, r"^padded to 64 against 1 \(medians\)"),
    "shared_prefix_training.py": (MODEL, r"shared prefix [\d.]+x faster"),
    "shared_prompts.py": (MODEL, r"shared tokens once: [\d.]+x faster; identical greedy answers \d/4"),
    "stage_overhead.py": (MODEL, r"^g0 warm-start\s+[\d.]+"),
    "token_logprobs.py": (MODEL, r"token log-probs: [\d.]+x faster"),
    "training_micro_batches.py": (MODEL, r"cut after the shared prefix: [\d.]+x faster"),
    "training_step.py": (MODEL, r"^GRPO\s+micro-batch 2: +\d+ tok/s 1\.00x \| micro-batch 4"),
    "vllm_adapters.py": (["transformers", "{tmp}/models", *MODEL], r"^transformers: .* 2 prompts x 4 tokens greedy"),
    "warehouse_queries.py": (["--smoke", "--dir", "{tmp}/warehouse"], r"^geometric mean speed-up over pandas"),
    "warm_start_fit.py": (MODEL, r"^epoch 1: loss [\d.]+ \| training seeds"),
}
SHELL = {  # each shell script, and the genenv command that starts or forks its runs
    "arms_two_seeds.sh": "rerun",
    "compare_four_seeds.sh": "compare",
    "edge_seed_draw.sh": "rerun",
    "generations_side_by_side.sh": "rerun",
    "sweep_agent_update.sh": "rerun",
}


def test_every_bench_script_has_a_smoke_run_here() -> None:
    scripts = {p.name for p in BENCH.glob("*.py") if 'if __name__ == "__main__":' in p.read_text()}
    assert scripts - ELSEWHERE == set(SCRIPTS)
    assert {p.name for p in BENCH.glob("*.sh")} == {*SHELL, "smoke.sh"}  # smoke.sh: what the others source


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(s, marks=[mark for mark, group in ((pytest.mark.slow, SLOW), (ONE_RAY, RAY)) if s in group])
        for s in sorted(SCRIPTS)
    ],
)
def test_bench_script_smoke(script: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch, capsys) -> None:
    arguments, expected = SCRIPTS[script]
    values = {"model": "", "tmp": str(tmp_path)}
    joined = " ".join(arguments)
    if "{model}" in joined:
        values["model"] = str(request.getfixturevalue("tiny_model_dir"))
    if "{data}" in joined:
        values["data"] = request.getfixturevalue("tiny_run").data_dir
    if "{synthetic}" in joined:
        values["synthetic"] = str(_synthetic_run(tmp_path / "synthetic"))
    if "{evaluations}" in joined:
        values["evaluations"] = str(_scored_warehouse(tmp_path / "scored"))
    argv = [a.format(**values) for a in arguments]
    if script in FLOW:
        request.getfixturevalue("prefect_server")
    if script in OWN_PROCESS:
        if script in FLOW:
            monkeypatch.setenv("PREFECT_API_URL", _api_url())
        done = subprocess.run(
            [sys.executable, str(BENCH / script), *argv], cwd=REPO, capture_output=True, text=True, timeout=1800
        )  # the bound only catches a hang: on a loaded 2-core host a Ray cluster's start alone takes minutes
        assert done.returncode == 0, done.stderr[-3000:]
        out = done.stdout
    else:
        monkeypatch.chdir(REPO)
        monkeypatch.syspath_prepend(str(BENCH))
        monkeypatch.setattr(sys, "argv", [str(BENCH / script), *argv])
        try:
            runpy.run_path(str(BENCH / script), run_name="__main__")
        except SystemExit as exit_:
            assert exit_.code in (None, 0), exit_
        out = capsys.readouterr().out
    assert re.search(expected, out, re.M), out[-3000:]


@pytest.mark.parametrize("script", SHELL)
def test_bench_shell_script_smoke_runs_only_commands_genenv_accepts(script: str) -> None:
    from genenv.cli import build_parser
    from genenv.config import load_config, parse_overrides

    done = subprocess.run(["bash", str(BENCH / script), "--smoke"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    commands = [shlex.split(line)[1:] for line in done.stderr.splitlines() if line.startswith("genenv ")]
    assert SHELL[script] in {c[0] for c in commands}, done.stderr
    for command in commands:
        args = build_parser().parse_args(command)
        if getattr(args, "set", None):
            config = getattr(args, "config", None)
            load_config(str(REPO / config) if config else None, parse_overrides(args.set))


@pytest.fixture(scope="module")
def tiny_run(tiny_model_dir: Path, prefect_server, tmp_path_factory: pytest.TempPathFactory):
    """Generation 0 of the real flow on the tiny model (its warm-started adapters, its seeds in the pools)."""
    from genenv.flows.evolve import evolve
    from tests.pipeline.conftest import small_config

    config = small_config(tiny_model_dir, tmp_path_factory.mktemp("run")).replace(generations=0)
    evolve(config.to_dict())
    return config


def _synthetic_run(root: Path) -> Path:
    """A synthetic 3-generation run written through the real write path (tests/support/synthetic_warehouse.py)."""
    from genenv.warehouse.store import Warehouse
    from tests.support.synthetic_warehouse import fill

    fill(Warehouse(str(root)), "demo", generations=3, evaluations=False)
    return root


def _api_url() -> str:
    """The session's Prefect server, for a script's own process (it would start a temporary one otherwise)."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


def _scored_warehouse(root: Path) -> Path:
    """A warehouse holding one BFCL evaluation of two simple_python items, written as `genenv eval` writes one."""
    from genenv.evaluation.benchmark_registry import select_items
    from genenv.evaluation.bfcl import Bfcl
    from genenv.evaluation.runner import ItemResult
    from genenv.tasks.benchmarks import Target, evaluation_rows
    from genenv.warehouse.store import Warehouse

    items = select_items(Bfcl().load(None), {"simple_python": 2}, limit=0)
    answers = [item.reference["ground_truth"] for item in items]
    results = [
        ItemResult("bfcl", item.category, item.item_id, str(answer), Bfcl().score(item, str(answer)).scores, None)
        for item, answer in zip(items, answers, strict=True)
    ]
    warehouse = Warehouse(str(root))
    rows, item_rows = evaluation_rows(Target("scored", run_id="scored", generation=1), "smoke/bfcl/", results)
    warehouse.append("evaluation_items", item_rows)
    warehouse.append("evaluations", rows)
    return root
