"""Handing freed memory back between phases: the C heap's free pages to the system, PyTorch's cached CUDA blocks to
the device (where a vLLM engine waking beside the trainer needs them)."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import torch


def return_freed_memory() -> None:
    """Hand the C heap's free pages back (glibc's malloc_trim; nothing on other C libraries).

    glibc keeps freed pages for reuse, but a phase with other tensor shapes (the next stage, the next micro-batch
    of another length) often cannot reuse them and asks for new ones. Called where a phase ends: after a model
    conversion, a training block, a generation call, and before each GRPO micro-batch (README, Speed: memory).
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    return getattr(ctypes.CDLL(None), "malloc_trim", None)


def release_device_memory() -> None:
    """Return PyTorch's cached CUDA blocks to the device once its queued work is done, and the host heap's free pages.

    After a training stage PyTorch's caching allocator still holds the activations' blocks: free for PyTorch, taken
    for anyone else. A vLLM engine waking from sleep maps its weights and KV cache back with its own allocator, so
    the blocks must go back to the device first (`torch.cuda.empty_cache`), after the kernels that used them ended
    (`torch.cuda.synchronize`). Nothing to do on a machine without CUDA but the host heap.
    """
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return_freed_memory()
