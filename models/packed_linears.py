"""Linear layers whose weights are laid out once for oneDNN's CPU kernels, for forward passes that never train.

A plain CPU `linear` hands oneDNN (bf16) or MKL (fp32) a weight in PyTorch's row-major layout, and the kernel
re-blocks it on every call: on a decoding step's few rows that costs as much as the multiply. MKL's fp32 matmul
also runs at half oneDNN's speed on AMD CPUs. Laying each weight out once per generation call
(`torch.ops.mkldnn._reorder_linear_weight`, what PyTorch's compiler does when it freezes weights) brought the
matmuls of a 16-row decoding step of the embedded model from 17.6 to 13.4 ms in bf16 and from 62.4 to 21.8 ms in
fp32 (bench/decode_step.py). bf16 results are bit-identical to `linear`'s (the same oneDNN kernel, minus the
re-blocking); fp32 differ from MKL's in the last bits.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import torch

PACKING_ROWS = 16
"""The row count oneDNN picks its weight layout for: a decoding step's batch. Any count still computes right."""


@contextmanager
def packed_linears(model: torch.nn.Module, dtype: torch.dtype) -> Iterator[None]:
    """Route every linear layer of `model` (LoRA's own A and B layers aside) through a copy of its weight packed
    in `dtype`, the dtype its matmuls compute in, until the block ends. Inputs are cast to `dtype` as autocast
    would. No autograd: use it under `torch.inference_mode()`. A no-op off the CPU or where oneDNN cannot pack."""
    linears = [
        module for name, module in model.named_modules() if isinstance(module, torch.nn.Linear) and ".lora_" not in name
    ]
    if not linears or linears[0].weight.device.type != "cpu" or not can_pack(dtype):
        yield
        return
    try:
        with torch.no_grad():
            for module in linears:
                module.forward = _PackedForward(module, dtype)
        yield
    finally:
        for module in linears:
            module.__dict__.pop("forward", None)


class _PackedForward:
    """`linear(x, W, b)` as one oneDNN call on W packed once."""

    def __init__(self, module: torch.nn.Linear, dtype: torch.dtype) -> None:
        self.dtype = dtype
        self.weight = torch.ops.mkldnn._reorder_linear_weight(module.weight.to(dtype), PACKING_ROWS)
        self.bias = None if module.bias is None else module.bias.to(dtype)

    def __call__(self, inputs: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(inputs.to(self.dtype), self.weight, self.bias, "none", [], "")


@cache
def can_pack(dtype: torch.dtype) -> bool:
    """Whether this build and CPU pack `dtype` weights and multiply them exactly as `linear` would (to fp32's
    last bits): oneDNN present, bf16 only on CPUs with bf16 units, checked once on a small layer."""
    if dtype not in (torch.float32, torch.bfloat16) or not torch.backends.mkldnn.is_available():
        return False
    if dtype == torch.bfloat16 and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return False
    layer = torch.nn.Linear(64, 48, dtype=dtype)
    inputs = torch.randn(5, 64, generator=torch.Generator().manual_seed(0)).to(dtype)
    try:
        with torch.no_grad():
            packed = _PackedForward(layer, dtype)(inputs)
            plain = layer(inputs)
    except RuntimeError:
        return False
    return torch.allclose(packed.float(), plain.float(), rtol=1e-2, atol=1e-3)
