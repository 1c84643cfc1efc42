"""Data-parallel updates (models/data_parallel.py), GRPO and RWR's weighted SFT: two gloo processes on 127.0.0.1, each
computing half of every step's rows, take the steps one process takes, within float tolerance (the ranks add their
gradient sums in another order), through torch's DDP, in a group of their own beside the default one a vLLM engine
holds."""

from __future__ import annotations

import json
import socket
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from safetensors.torch import load_file

from genenv.models.data_parallel import joined, rank_and_world, reduction_record
from genenv.models.grpo import grpo_update
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.rwr import weighted_sft
from tests.support.training_rows import EXAMPLES, GRPO, RWR, SAMPLES

UPDATES = {
    "grpo": (grpo_update, SAMPLES, GRPO, ("loss", "kl", "grad_norm", "clip_ratio", "entropy", "approx_kl")),
    "rwr": (weighted_sft, EXAMPLES, RWR, ("loss", "nll", "kl", "grad_norm", "entropy")),
}


def updated(model_dir: Path, out: Path, kind: str) -> None:
    """The update `kind` from a fresh adapter: the adapter and the step records, saved under `out`, and the tokens
    this process put through the model."""
    update, rows, settings, compared = UPDATES[kind]
    torch.manual_seed(0)
    policy = PolicyPair.load(model_dir, LoraSettings(), seed=0)
    embedded: list[int] = []
    policy.model.get_input_embeddings().register_forward_hook(lambda _, ids, __: embedded.append(ids[0].numel()))
    records = update(policy, "agent", rows, **settings)
    index = rank_and_world()[0]
    (out / f"tokens-{index}").write_text(str(sum(embedded)))
    ddp = {key: reduction_record().get(key) for key in ("world_size", "comm_hook", "reductions")}
    (out / f"ddp-{index}.json").write_text(json.dumps(ddp))
    if index == 0:
        policy.save_adapter("agent", out / "adapter")
        keep = ("n_rows", "skipped", *compared)
        (out / "records.json").write_text(json.dumps([{k: r.get(k) for k in keep} for r in records]))


def rank(index: int, world: int, port: int, model_dir: Path, out: Path, kind: str) -> None:
    torch.set_num_threads(1)
    # torch's default group, a world of one, as a vLLM engine in a rollout worker's process holds it
    dist.init_process_group("gloo", init_method=f"file://{out}/alone-{index}", rank=0, world_size=1)
    try:
        with joined(("127.0.0.1", port), index, world, torch.device("cpu"), timedelta(seconds=120)):
            updated(model_dir, out, kind)
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("kind", sorted(UPDATES))
def test_two_gloo_ranks_take_the_single_process_step(tiny_model_dir: Path, tmp_path: Path, kind: str) -> None:
    alone, spread = tmp_path / "alone", tmp_path / "spread"
    alone.mkdir(), spread.mkdir()
    updated(tiny_model_dir, alone, kind)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.spawn(rank, args=(2, port, tiny_model_dir, spread, kind), nprocs=2, join=True)

    expected, got = (json.loads((folder / "records.json").read_text()) for folder in (alone, spread))
    assert [r["n_rows"] for r in got] == [r["n_rows"] for r in expected] and not any(r["skipped"] for r in got)
    for mine, theirs in zip(got, expected, strict=True):
        for key in UPDATES[kind][3]:
            assert abs(mine[key] - theirs[key]) <= 1e-5 * max(1.0, abs(theirs[key])), (key, mine, theirs)
    # The gradient sums went through torch's DDP: its reducer, with the summing comm hook, once per step on each rank.
    reduced = [json.loads((spread / f"ddp-{rank}.json").read_text()) for rank in (0, 1)]
    assert reduced == [{"world_size": 2, "comm_hook": "_summed", "reductions": len(got)}] * 2, reduced
    assert json.loads((alone / "ddp-0.json").read_text()) == {"world_size": None, "comm_hook": None, "reductions": None}
    tokens = [int((folder / f"tokens-{rank}").read_text()) for folder, rank in ((alone, 0), (spread, 0), (spread, 1))]
    assert 0 < tokens[1] < tokens[0] and 0 < tokens[2] < tokens[0], f"each rank computes a share of the rows: {tokens}"
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
