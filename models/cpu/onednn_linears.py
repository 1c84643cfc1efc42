"""Linear layers computed by oneDNN's CPU kernels instead of PyTorch's default ones.

A plain CPU `linear` hands oneDNN (bf16) or MKL (fp32) a weight in PyTorch's row-major layout, and the kernel
re-blocks it on every call: on a decoding step's few rows that costs as much as the multiply. MKL's fp32 matmul
also runs at half oneDNN's speed on AMD CPUs, in training's large products too. So:
- `packed_linears`, for generation: each weight laid out once per call (`torch.ops.mkldnn._reorder_linear_weight`,
  what PyTorch's compiler does when it freezes weights): a decoding step's matmuls take a quarter (bf16) to two
  thirds (fp32) less time (docs/performance.md, 'Measurements behind the code').
- `OneDnnLinear`, for fp32 forward and backward passes: frozen layers multiplied by oneDNN on their plain weights,
  no copy kept.
bf16 results are bit-identical to `linear`'s (the same oneDNN kernel, minus the re-blocking); fp32 differ from
MKL's in the last bits. The `torch.ops.mkldnn` calls are private PyTorch API: this module is the only one that makes
them, and only on the PyTorch versions they were checked on (`CHECKED_TORCH`); elsewhere every layer stays plain.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import torch

CHECKED_TORCH = ("2.13",)
"""PyTorch releases (major.minor) whose private oneDNN ops this module was measured and tested on."""
PACKING_ROWS = 16
"""The row count oneDNN picks its weight layout for: a decoding step's batch. Any count still computes right."""


def base_linears(model: torch.nn.Module) -> list[torch.nn.Linear]:
    """The model's linear layers, LoRA's own A and B layers aside (the base layers they adapt included)."""
    return [m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and ".lora_" not in n]


@contextmanager
def packed_linears(model: torch.nn.Module, dtype: torch.dtype) -> Iterator[None]:
    """Route every base linear layer of `model` through a copy of its weight packed in `dtype`, the dtype its
    matmuls compute in, until the block ends. Inputs are cast to `dtype` as autocast would. No autograd: use it
    under `torch.inference_mode()`. A no-op off the CPU or where oneDNN cannot multiply `dtype`."""
    linears = _onednn_linears(model, dtype)
    try:
        with torch.no_grad():
            for module in linears:
                module.forward = PackedLinear(module.weight.to(dtype), module.bias)
        yield
    finally:
        for module in linears:
            module.__dict__.pop("forward", None)


class PackedLinear:
    """`linear(x, W, b)` as one oneDNN call on W packed once for `rows`-row inputs, in W's dtype (inputs are cast
    to it)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, rows: int = PACKING_ROWS) -> None:
        self.dtype = weight.dtype
        self.weight = torch.ops.mkldnn._reorder_linear_weight(weight, rows)
        self.bias = None if bias is None else bias.to(weight.dtype)

    def __call__(self, inputs: torch.Tensor) -> torch.Tensor:
        return _onednn_product(inputs.to(self.dtype), self.weight, self.bias)


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
        return _onednn_product(inputs, weight, bias)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (weight,) = ctx.saved_tensors
        return _onednn_product(grad, weight.t()), None, None


def use_onednn(model: torch.nn.Module) -> None:
    """Make every plain base linear layer of a CPU `model` a `OneDnnLinear`, once at load, where oneDNN computes
    fp32 products here. Its weights, parameters and state dict are unchanged."""
    for module in _onednn_linears(model, torch.float32):
        if type(module) is torch.nn.Linear:
            module.__class__ = OneDnnLinear


def _onednn_linears(model: torch.nn.Module, dtype: torch.dtype) -> list[torch.nn.Linear]:
    """`base_linears(model)` where oneDNN is to multiply them in `dtype`: on the CPU, where `onednn_supports` it."""
    linears = base_linears(model)
    return linears if linears and linears[0].weight.device.type == "cpu" and onednn_supports(dtype) else []


def _onednn_product(inputs: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """inputs·weightᵀ + bias in one oneDNN call, `weight` plain or packed (`PackedLinear`)."""
    return torch.ops.mkldnn._linear_pointwise(inputs, weight, bias, "none", [], "")


@cache
def onednn_supports(dtype: torch.dtype) -> bool:
    """Whether this build and CPU multiply `dtype` weights by oneDNN, packed and plain, as `linear` would (to
    fp32's last bits): a checked PyTorch, oneDNN present, bf16 only on CPUs with bf16 units, checked once on a small
    layer."""
    if ".".join(torch.__version__.split(".")[:2]) not in CHECKED_TORCH:
        return False
    if dtype not in (torch.float32, torch.bfloat16) or not torch.backends.mkldnn.is_available():
        return False
    if dtype == torch.bfloat16 and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        return False
    layer = torch.nn.Linear(64, 48, dtype=dtype)
    inputs = torch.randn(5, 64, generator=torch.Generator().manual_seed(0)).to(dtype)
    try:
        with torch.no_grad():
            plain = layer(inputs).float()
            packed = PackedLinear(layer.weight, layer.bias)(inputs).float()
            dense = _onednn_product(inputs, layer.weight, layer.bias).float()
    except RuntimeError:
        return False
    return all(torch.allclose(result, plain, rtol=1e-2, atol=1e-3) for result in (packed, dense))
