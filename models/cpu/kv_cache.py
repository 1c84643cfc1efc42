"""The KV cache generation decodes over: transformers' dynamic cache, with keys kept in the values' dtype and
each layer appending into columns it reserved ahead instead of copying itself at every step."""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

ROOM = 64
"""Columns a layer reserves past its end when it must move: one copy of the layer per ROOM decoding steps."""


class DecodingCache(DynamicCache):
    """A dynamic KV cache of `ReservingLayer`s that stores keys in the values' dtype.

    Under bf16 autocast the rotary embedding multiplies bf16 keys by fp32 cos/sin, so keys come out fp32 while
    values are bf16; attention casts the whole fp32 key cache to bf16 again at every decoding step. Storing the
    bf16 cast once feeds attention the same values (identical tokens) with half the key memory."""

    def __init__(self) -> None:
        super().__init__()
        self.layer_class_to_replicate = ReservingLayer

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return super().update(key_states.to(value_states.dtype), value_states, layer_idx, *args, **kwargs)


class ReservingLayer(DynamicLayer):
    """A cache layer whose keys and values are views of the first columns of buffers with room after them.

    `DynamicLayer` concatenates, copying the whole layer at every decoding step: 60 copies of the cache per token.
    Over 300 to 800 cached columns of 16 rows a step took 1.10x to 1.28x as long in bf16 that way, 1.17x to 1.56x
    in fp32 (bench/kv_cache.py), with identical greedy tokens. This layer writes
    a step's columns into the room, and copies itself into new buffers ROOM columns longer only when the room is
    used up, or when `keys` or `values` were replaced (rows regrouped or selected): anything that is not still a
    view of the first columns of its buffers gets copied, so nothing outside is ever written into."""

    buffers: tuple[torch.Tensor, torch.Tensor] | None = None

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        used = self.keys.shape[-2] if self.keys.dim() == 4 else 0
        end = used + key_states.shape[-2]
        if not self._has_room(end):
            self.buffers = (
                _reserved(self.keys if used else None, key_states, end + ROOM),
                _reserved(self.values if used else None, value_states, end + ROOM),
            )
        keys, values = self.buffers
        keys[:, :, used:end] = key_states
        values[:, :, used:end] = value_states
        self.keys, self.values = keys[:, :, :end], values[:, :, :end]
        return self.keys, self.values

    def _has_room(self, end: int) -> bool:
        """Whether `keys` and `values` are still the first columns of `buffers`, with room up to column `end`."""
        return self.buffers is not None and all(
            view.data_ptr() == buffer.data_ptr()
            and view.shape[:2] == buffer.shape[:2]
            and view.stride() == buffer.stride()
            and end <= buffer.shape[2]
            for view, buffer in zip((self.keys, self.values), self.buffers, strict=True)
        )


def _reserved(columns: torch.Tensor | None, like: torch.Tensor, width: int) -> torch.Tensor:
    """A new [rows, heads, width, dim] buffer of `like`'s rows, heads, dim and dtype, starting with `columns`."""
    rows, heads, _, dim = like.shape
    buffer = like.new_empty((rows, heads, width, dim))
    if columns is not None:
        buffer[:, :, : columns.shape[2]] = columns
    return buffer
