"""Data-parallel GRPO (models/data_parallel.py): two gloo processes on 127.0.0.1, each computing half of every step's
rows, take the step one process takes, within float tolerance (the ranks add their gradient sums in another order)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from safetensors.torch import load_file

from genenv.models.grpo import GroupSample, grpo_update
from genenv.models.policy import LoraSettings, PolicyPair

PROMPT_A = [1, 40, 41, 42, 43, 44]
PROMPT_B = [1, 50, 51]
SAMPLES = [GroupSample(PROMPT_A, [60 + i, 70 + i, 80], r, "a") for i, r in enumerate([1.0, 0.0, 0.0, 1.0, 0.5])]
SAMPLES += [GroupSample(PROMPT_B, [90 + i] * (i + 1), r, "b") for i, r in enumerate([1.0, 0.0, 0.5])]
UPDATE = {"lr": 1e-2, "kl_coef": 0.1, "epochs": 2, "minibatch_size": 5, "micro_batch_size": 2, "seed": 3}


def updated(model_dir: Path, out: Path) -> None:
    """GRPO over SAMPLES from a fresh adapter: the adapter and the step records, saved under `out`."""
    torch.manual_seed(0)
    policy = PolicyPair.load(model_dir, LoraSettings(), seed=0)
    records = grpo_update(policy, "agent", SAMPLES, **UPDATE)
    if not dist.is_initialized() or dist.get_rank() == 0:
        policy.save_adapter("agent", out / "adapter")
        keep = ("loss", "kl", "n_rows", "grad_norm", "clip_ratio", "entropy", "approx_kl", "skipped")
        (out / "records.json").write_text(json.dumps([{k: r[k] for k in keep} for r in records]))


def rank(index: int, world: int, port: int, model_dir: Path, out: Path) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=index, world_size=world)
    try:
        updated(model_dir, out)
    finally:
        dist.destroy_process_group()


def test_two_gloo_ranks_take_the_single_process_step(tiny_model_dir: Path, tmp_path: Path) -> None:
    alone, spread = tmp_path / "alone", tmp_path / "spread"
    alone.mkdir(), spread.mkdir()
    updated(tiny_model_dir, alone)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.spawn(rank, args=(2, port, tiny_model_dir, spread), nprocs=2, join=True)

    expected, got = (json.loads((folder / "records.json").read_text()) for folder in (alone, spread))
    assert [r["n_rows"] for r in got] == [r["n_rows"] for r in expected] and not any(r["skipped"] for r in got)
    for mine, theirs in zip(got, expected, strict=True):
        for key in ("loss", "kl", "grad_norm", "clip_ratio", "entropy", "approx_kl"):
            assert abs(mine[key] - theirs[key]) <= 1e-5 * max(1.0, abs(theirs[key])), (key, mine, theirs)
    before = PolicyPair.load(tiny_model_dir, LoraSettings(), seed=0)
    trained = {n: p.detach() for n, p in before.model.named_parameters() if "lora_" in n and ".agent." in n}
    adapters = [load_file(folder / "adapter" / "adapter_model.safetensors") for folder in (alone, spread)]
    assert adapters[0].keys() == adapters[1].keys()
    moved = max((adapters[0][k] - trained_value(trained, k)).abs().max().item() for k in adapters[0])
    worst = max((adapters[0][k] - adapters[1][k]).abs().max().item() for k in adapters[0])
    assert moved > 1e-3 and worst <= 1e-5, (moved, worst)


def trained_value(parameters: dict[str, torch.Tensor], key: str) -> torch.Tensor:
    """The fresh adapter's value of a saved tensor (saved as `...lora_A.weight`, held as `...lora_A.agent.weight`)."""
    name = key.removeprefix("base_model.model.")
    [value] = [p for n, p in parameters.items() if n.replace(".agent.", ".").endswith(name)]
    return value
