"""Training shapes that repeat, and a bounded oneDNN primitive cache: PyTorch's CPU kernels keep compiled code per
tensor shape without bound (bf16 attention's brgemm kernels, oneDNN's matmul primitives; bench/shape_buckets.py
measures what that costs), and glibc reuses a freed block only for a request that fits it."""

from __future__ import annotations

import os
from dataclasses import dataclass

ONEDNN_PRIMITIVES = 16
"""oneDNN primitives kept per process (its default: 1,024)."""


@dataclass(frozen=True)
class ShapeBuckets:
    """Training rows are left-padded to a multiple of `positions`, and the completions given logits to a multiple
    of `completions`, so micro-batch shapes repeat."""

    positions: int = 64
    completions: int = 16

    def row_width(self, tokens: int) -> int:
        return round_up(tokens, self.positions)

    def completion_width(self, tokens: int) -> int:
        return round_up(tokens, self.completions)


def round_up(n: int, step: int) -> int:
    return -(-n // step) * step


def bound_onednn_primitive_cache() -> None:
    """oneDNN, which runs PyTorch's bf16 matmuls on CPU, keeps a compiled primitive per tensor shape, up to 1,024.
    Micro-batches and generation batches of ever new lengths fill it with shapes that never come back; a small
    cache lowers the peak in the same time, since each step reuses its own few shapes, and none at all is much
    slower (bench/onednn_cache.py; docs/performance.md, 'Measurements behind the code'). oneDNN reads the
    variable when it makes its first primitive; a value the user set is kept."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(ONEDNN_PRIMITIVES))
