"""Data parallelism over torch.distributed (gloo on CPU, NCCL on GPU): every rank holds the whole policy and its
AdamW state, computes its share of each step's rows, and the ranks add their gradient sums before the clip and the
optimizer step. The loss is a sum over tokens divided by the step's token count (models/grpo.py), so the added
gradients are the single-process gradient up to the order of float additions, and every rank takes the same step.
Outside an initialised process group, all of this is the identity: one process, every row."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
import torch.distributed as dist


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the number of ranks; (0, 1) outside a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def my_rows(indices: Sequence[int], rank: int, world: int) -> list[int]:
    """The rows this rank computes: row i belongs to rank i mod world, in every step it is drawn into."""
    return [i for i in indices if i % world == rank]


def added_across_ranks(params: Iterable[torch.nn.Parameter], stats: dict[str, float]) -> dict[str, float]:
    """Add every rank's gradients (a rank that computed no row adds zeros) and token statistics into each rank."""
    if rank_and_world()[1] == 1:
        return dict(stats)
    params = list(params)
    for param in params:
        if param.grad is None:
            param.grad = torch.zeros_like(param)
        dist.all_reduce(param.grad)
    names = sorted(stats)  # on the gradients' device: NCCL reduces only GPU tensors
    values = torch.tensor([stats[name] for name in names], dtype=torch.float64, device=params[0].device)
    dist.all_reduce(values)
    return dict(zip(names, values.tolist(), strict=True))
