"""Data parallelism over torch.distributed (gloo on CPU, NCCL on GPU): every rank holds the whole policy and its
AdamW state, computes its share of each step's rows, and the ranks add their gradient sums before the clip and the
optimizer step. The loss is a sum over tokens divided by the step's token count (models/grpo.py), so the added
gradients are the single-process gradient up to the order of float additions, and every rank takes the same step.
Outside `joined`, all of this is the identity: one process, every row.

The ranks meet in a process group of their own, not torch's default one: a vLLM engine in the same process (a Ray
worker that generates with vLLM and trains, tasks/workers.py) already holds the default group, a world of one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from genenv.faults import crash_point


@dataclass(frozen=True)
class Ranks:
    """The update this process joined: its rank, the number of ranks, and their process group."""

    rank: int
    world: int
    group: Any


_joined: Ranks | None = None


@contextmanager
def joined(meeting: tuple[str, int], rank: int, world: int, device: torch.device, timeout: timedelta) -> Iterator[None]:
    """Within the block, updates in this process run as rank `rank` of `world`, which meet at `meeting` (host and
    a free port there, where rank 0 listens); a collective that waits `timeout` for a peer fails."""
    global _joined
    host, port = meeting
    store = dist.TCPStore(host, port, world, is_master=rank == 0, timeout=timeout)
    if device.type == "cuda":
        options = dist.ProcessGroupNCCL.Options()
        options._timeout = timeout
        group = dist.ProcessGroupNCCL(store, rank, world, options)
    else:
        group = dist.ProcessGroupGloo(store, rank, world, timeout)
    _joined = Ranks(rank, world, group)
    try:
        yield
    finally:
        _joined = None
        if device.type == "cuda":
            group.shutdown()


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the number of ranks; (0, 1) outside `joined`."""
    return (_joined.rank, _joined.world) if _joined is not None else (0, 1)


def my_rows(indices: Sequence[int], rank: int, world: int) -> list[int]:
    """The rows this rank computes: row i belongs to rank i mod world, in every step it is drawn into."""
    return [i for i in indices if i % world == rank]


def added_across_ranks(params: Iterable[torch.nn.Parameter], stats: dict[str, float]) -> dict[str, float]:
    """Add every rank's gradients (a rank that computed no row adds zeros) and token statistics into each rank."""
    if _joined is None or _joined.world == 1:
        return dict(stats)
    params = list(params)
    crash_point("rank:adding")  # a rank dying mid-update: its peers find it gone inside the gradient sum
    for param in params:
        if param.grad is None:
            param.grad = torch.zeros_like(param)
        _joined.group.allreduce([param.grad]).wait()
    names = sorted(stats)  # on the gradients' device: NCCL reduces only GPU tensors
    values = torch.tensor([stats[name] for name in names], dtype=torch.float64, device=params[0].device)
    _joined.group.allreduce([values]).wait()
    return dict(zip(names, values.tolist(), strict=True))
