"""`precision: auto`: bfloat16 where the device computes it natively, float32 elsewhere.

bfloat16 halves the weights' memory traffic, which pays on a CUDA GPU that supports it and on a CPU whose oneDNN
kernels run it natively (AVX-512 or AMX); on a CPU with AVX2 only, every bfloat16 matmul is converted in software,
and a LoRA training step of the embedded model took 20x as long as in float32 (bench/precision.py,
docs/performance.md)."""

from __future__ import annotations

import torch


def native_bfloat16() -> bool:
    """This machine's compute device runs bfloat16 natively: the CUDA GPU, else the CPU's oneDNN kernels."""
    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def resolve_precision(precision: str) -> str:
    """`precision`, with "auto" made concrete for this machine."""
    if precision != "auto":
        return precision
    return "bfloat16" if native_bfloat16() else "float32"
