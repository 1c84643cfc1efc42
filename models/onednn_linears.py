"""Linear layers computed by oneDNN's CPU kernels instead of PyTorch's default ones.

A plain CPU `linear` hands oneDNN (bf16) or MKL (fp32) a weight in PyTorch's row-major layout, and the kernel
re-blocks it on every call: on a decoding step's few rows that costs as much as the multiply. MKL's fp32 matmul
also runs at half oneDNN's speed on AMD CPUs, in training's large products too. So:
- `packed_linears`, for generation: each weight laid out once per call (`torch.ops.mkldnn._reorder_linear_weight`,
  what PyTorch's compiler does when it freezes weights). It brought the matmuls of a 16-row decoding step of the
  embedded model from 17.6 to 13.4 ms in bf16 and from 62.4 to 21.8 ms in fp32 (bench/decode_step.py).
- `OneDnnLinear`, for fp32 forward and backward passes: frozen layers multiplied by oneDNN on their plain weights,
  no copy kept.
bf16 results are bit-identical to `linear`'s (the same oneDNN kernel, minus the re-blocking); fp32 differ from
MKL's in the last bits.
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


class OneDnnLinear(torch.nn.Linear):
    """A linear layer whose frozen fp32 CPU products, forward and backward, are oneDNN's (`use_onednn`).

    A trainable weight or bias, another dtype or device, or autocast: the plain `linear`."""

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        trainable = self.weight.requires_grad or (self.bias is not None and self.bias.requires_grad)
        plain_fp32_cpu = inputs.dtype == torch.float32 and inputs.device.type == "cpu"
        if trainable or not plain_fp32_cpu or torch.is_autocast_enabled("cpu"):
            return super().forward(inputs)
        return _OneDnnProduct.apply(inputs, self.weight, self.bias)


class _OneDnnProduct(torch.autograd.Function):
    """x·Wᵀ + b by oneDNN; the backward pass gives x its gradient (g·W, by oneDNN too) and W and b none."""

    @staticmethod
    def forward(ctx, inputs: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(weight)
        return torch.ops.mkldnn._linear_pointwise(inputs, weight, bias, "none", [], "")

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (weight,) = ctx.saved_tensors
        return torch.ops.mkldnn._linear_pointwise(grad, weight.t(), None, "none", [], ""), None, None


def use_onednn(model: torch.nn.Module) -> None:
    """Make every linear layer of a CPU `model` (LoRA's own A and B layers aside) a `OneDnnLinear`, once at load,
    where oneDNN computes fp32 products here. Its weights, parameters and state dict are unchanged."""
    linears = [m for n, m in model.named_modules() if type(m) is torch.nn.Linear and ".lora_" not in n]
    if linears and linears[0].weight.device.type == "cpu" and can_pack(torch.float32):
        for module in linears:
            module.__class__ = OneDnnLinear


@cache
def can_pack(dtype: torch.dtype) -> bool:
    """Whether this build and CPU multiply `dtype` weights by oneDNN, packed and plain, as `linear` would (to
    fp32's last bits): oneDNN present, bf16 only on CPUs with bf16 units, checked once on a small layer."""
    if dtype not in (torch.float32, torch.bfloat16) or not torch.backends.mkldnn.is_available():
        return False
    if dtype == torch.bfloat16 and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return False
    layer = torch.nn.Linear(64, 48, dtype=dtype)
    inputs = torch.randn(5, 64, generator=torch.Generator().manual_seed(0)).to(dtype)
    try:
        with torch.no_grad():
            plain = layer(inputs).float()
            packed = _PackedForward(layer, dtype)(inputs).float()
            dense = torch.ops.mkldnn._linear_pointwise(inputs, layer.weight, layer.bias, "none", [], "").float()
    except RuntimeError:
        return False
    return all(torch.allclose(result, plain, rtol=1e-2, atol=1e-3) for result in (packed, dense))
