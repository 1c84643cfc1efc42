"""Data parallelism through torch's DistributedDataParallel (gloo on CPU, NCCL on GPU): every rank holds the whole
policy and its AdamW state, computes its share of each step's rows, and DDP's reducer adds the ranks' gradients
before the clip and the optimizer step. The loss is a sum over tokens divided by the step's token count
(models/grpo.py), so the added gradients are the single-process gradient up to the order of float additions, and every
rank takes the same step. Outside `joined`, all of this is the identity: one process, every row.

A step's rows are cut into micro-batches of different lengths, and a rank may compute none: each rank runs its
micro-batches through the model itself, where DDP does not look (DDP acts only after a forward through its wrapper),
and then one backward through DDP of a module made of the step's trainable parameters, times zero (`_Carrier`). That
backward adds nothing to their gradients and hands each to DDP's reducer, which sums them across ranks in buckets
(a comm hook that sums: the loss is already divided by the step's tokens on every rank).

The ranks meet in a process group of their own, not torch's default one: a vLLM engine in the same process (a Ray
worker that generates with vLLM and trains, runtime/workers.py) already holds the default group, a world of one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from genenv.faults import crash_point


@dataclass
class Ranks:
    """The update this process joined: its rank, the number of ranks, their process group, and one DDP reducer per
    set of trainable parameters (a role's adapter)."""

    rank: int
    world: int
    group: dist.ProcessGroup
    reducers: dict[tuple[int, ...], DistributedDataParallel] = field(default_factory=dict)
    reductions: int = 0
    """Gradient sums DDP made in this update: one per optimizer step."""


_joined: Ranks | None = None


@contextmanager
def joined(meeting: tuple[str, int], rank: int, world: int, device: torch.device, timeout: timedelta) -> Iterator[None]:
    """Within the block, updates in this process run as rank `rank` of `world`, which meet at `meeting` (host and
    a free port there, where rank 0 listens); a collective that waits `timeout` for a peer fails."""
    global _joined
    host, port = meeting
    store = dist.TCPStore(host, port, world, is_master=rank == 0, timeout=timeout)
    group, backend = _process_group(store, rank, world, device, timeout)
    _joined = Ranks(rank, world, group)
    try:
        yield
    finally:
        _joined.reducers.clear()
        _joined = None
        if device.type == "cuda":
            backend.shutdown()


def _process_group(
    store: dist.Store, rank: int, world: int, device: torch.device, timeout: timedelta
) -> tuple[dist.ProcessGroup, Any]:
    """A process group of the ranks beside torch's default one (which `dist.new_group` would need), and its backend
    for the device, registered in the group as torch registers its own: DDP takes only a group."""
    if device.type == "cuda":
        options = dist.ProcessGroupNCCL.Options()
        options._timeout = timeout
        backend, kind = dist.ProcessGroupNCCL(store, rank, world, options), dist.ProcessGroup.BackendType.NCCL
    else:
        backend, kind = dist.ProcessGroupGloo(store, rank, world, timeout), dist.ProcessGroup.BackendType.GLOO
    group = dist.ProcessGroup(store, rank, world)
    group._set_default_backend(kind)
    group._register_backend(torch.device(device.type), kind, backend)
    return group, backend


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the number of ranks; (0, 1) outside `joined`."""
    return (_joined.rank, _joined.world) if _joined is not None else (0, 1)


def my_rows(indices: Sequence[int], rank: int, world: int) -> list[int]:
    """The rows this rank computes: row i belongs to rank i mod world, in every step it is drawn into."""
    return [i for i in indices if i % world == rank]


def added_across_ranks(params: Iterable[torch.nn.Parameter], stats: dict[str, float]) -> dict[str, float]:
    """Add every rank's gradients (a rank that computed no row adds zeros) through DDP, and every rank's token
    statistics, into each rank."""
    if _joined is None or _joined.world == 1:
        return dict(stats)
    params = list(params)
    crash_point("rank:adding")  # a rank dying mid-update: its peers find it gone inside the gradient sum
    for param in params:
        if param.grad is None:
            param.grad = torch.zeros_like(param)
    _reducer(_joined, params)().backward()
    _joined.reductions += 1
    names = sorted(stats)  # on the gradients' device: NCCL reduces only GPU tensors
    values = torch.tensor([stats[name] for name in names], dtype=torch.float64, device=params[0].device)
    _joined.group.allreduce([values]).wait()
    return dict(zip(names, values.tolist(), strict=True))


def reduction_record() -> dict[str, Any]:
    """What DDP's own logging says of this update's last gradient sum (its world, comm hook, buckets); {} alone."""
    if _joined is None or not _joined.reducers:
        return {}
    return {**next(reversed(_joined.reducers.values()))._get_ddp_logging_data(), "reductions": _joined.reductions}


class _Carrier(torch.nn.Module):
    """A step's trainable parameters as one module, whose forward touches each once, times zero: its backward through
    DDP adds nothing to their gradients and hands each to DDP's reducer."""

    def __init__(self, params: list[torch.nn.Parameter]) -> None:
        super().__init__()
        self.carried = torch.nn.ParameterList(params)

    def forward(self) -> torch.Tensor:
        return torch.stack([(param * 0).sum() for param in self.carried]).sum()


def _reducer(ranks: Ranks, params: list[torch.nn.Parameter]) -> DistributedDataParallel:
    """DDP over `params`, made once per update and set of parameters; its comm hook sums (DDP's default averages)."""
    key = tuple(id(param) for param in params)
    if key not in ranks.reducers:
        reducer = DistributedDataParallel(_Carrier(params), process_group=ranks.group, init_sync=False)
        reducer.register_comm_hook(ranks.group, _summed)
        ranks.reducers[key] = reducer
    return ranks.reducers[key]


def _summed(group, bucket):  # unannotated: DDP checks a hook's annotations as objects, these would be strings
    """DDP comm hook: the bucket's gradients (a dist.GradBucket) summed over the ranks (a dist.ProcessGroup)."""
    work = dist.all_reduce(bucket.buffer(), group=group, async_op=True)
    return work.get_future().then(lambda done: done.value()[0])
