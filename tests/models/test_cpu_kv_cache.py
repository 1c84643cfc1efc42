from __future__ import annotations

import torch
from transformers import DynamicCache

from genenv.models.cpu.kv_cache import ROOM, DecodingCache, ReservingLayer


def columns(count: int, rows: int = 3, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, 2, count, 4, generator=torch.Generator().manual_seed(seed))


def test_layers_hold_what_concatenation_holds_and_move_once_per_room() -> None:
    reserving, concatenating = DecodingCache(), DynamicCache()
    steps = [columns(7, seed=0)] + [columns(1, seed=s) for s in range(1, 2 * ROOM)]
    buffers = set()
    for step in steps:
        for cache in (reserving, concatenating):
            keys, values = cache.update(step, step * 2, 0)
        buffers.add(reserving.layers[0].buffers[0].data_ptr())
        assert torch.equal(keys, concatenating.layers[0].keys)
        assert torch.equal(values, concatenating.layers[0].values)
    assert isinstance(reserving.layers[0], ReservingLayer)
    assert reserving.get_seq_length() == 7 + 2 * ROOM - 1
    assert len(buffers) == 2, "the first buffer holds 7 + ROOM columns; one move makes room for the rest"


def test_keys_are_stored_in_the_values_dtype() -> None:
    cache = DecodingCache()
    keys, values = cache.update(columns(5), columns(5).bfloat16(), 0)
    assert keys.dtype == values.dtype == torch.bfloat16


def test_replaced_columns_are_copied_never_written_into() -> None:
    """Regrouping rows sets a layer's keys and values to tensors of its own making; one that is a view of a
    longer tensor (here, the first 3 of 10 columns) must not have the next columns written into its owner."""
    cache = DecodingCache()
    cache.update(columns(4), columns(4), 0)
    layer = cache.layers[0]
    owner = columns(10, seed=9)
    kept = owner.clone()
    layer.keys, layer.values = owner[:, :, :3], owner[:, :, :3]
    keys, _ = cache.update(columns(1, seed=5), columns(1, seed=5), 0)
    assert torch.equal(owner, kept)
    assert torch.equal(keys, torch.cat([kept[:, :, :3], columns(1, seed=5)], dim=2))


def test_selected_rows_keep_their_own_columns() -> None:
    cache, plain = DecodingCache(), DynamicCache()
    for each in (cache, plain):
        each.update(columns(6), columns(6), 0)
        each.batch_select_indices(torch.tensor([2, 0]))
        each.update(columns(1, rows=2, seed=3), columns(1, rows=2, seed=3), 0)
    assert torch.equal(cache.layers[0].keys, plain.layers[0].keys)
    assert torch.equal(cache.layers[0].values, plain.layers[0].values)
