from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from genenv.models.decoding import DecodingRows, Row, cache_layers, next_tokens


def generators(count: int, seed: int = 0) -> list[torch.Generator]:
    return [torch.Generator().manual_seed(seed + i) for i in range(count)]


def test_greedy_takes_the_argmax_of_bf16_logits() -> None:
    logits = torch.randn(5, 300).bfloat16()
    assert next_tokens(logits, generators(5), temperature=0, top_p=0.9).tolist() == logits.argmax(-1).tolist()


def test_draws_follow_the_tempered_nucleus() -> None:
    """top_p 0.9 of (0.5, 0.3, 0.15, 0.05) keeps the first three (the mass above each is 0, 0.5, 0.8, 0.95);
    temperature 0.5 squares the probabilities before the nucleus is cut."""
    probabilities = torch.tensor([0.5, 0.3, 0.15, 0.05])
    rows = 4000
    logits = probabilities.log().repeat(rows, 1)
    drawn = next_tokens(logits, generators(rows), temperature=1.0, top_p=0.9)
    frequencies = torch.bincount(drawn, minlength=4) / rows
    assert frequencies[3] == 0
    assert torch.allclose(frequencies[:3], probabilities[:3] / 0.95, atol=0.03), frequencies
    tempered = probabilities**2 / (probabilities**2).sum()  # 0.66, 0.24, 0.06, 0.007: the nucleus is two tokens
    drawn = next_tokens(logits, generators(rows, seed=rows), temperature=0.5, top_p=0.9)
    frequencies = torch.bincount(drawn, minlength=4) / rows
    assert frequencies[2:].sum() == 0
    assert torch.allclose(frequencies[:2], tempered[:2] / tempered[:2].sum(), atol=0.03), frequencies
    everything = torch.bincount(next_tokens(logits, generators(rows), temperature=1.0, top_p=1.0), minlength=4)
    assert torch.allclose(everything / rows, probabilities, atol=0.03)


def test_rows_beyond_the_candidates_draw_as_a_full_sort_would() -> None:
    """Rows whose likeliest `candidates` tokens hold less than top_p sort the whole vocabulary: the same tokens as
    with every token a candidate, and each row's draw is the one it gets alone."""
    logits = torch.randn(12, 500) * torch.linspace(0.2, 6, 12).unsqueeze(-1)  # flat to peaked rows
    few = next_tokens(logits, generators(12), temperature=1.0, top_p=0.8, candidates=4)
    every = next_tokens(logits, generators(12), temperature=1.0, top_p=0.8, candidates=500)
    assert few.tolist() == every.tolist()
    alone = [next_tokens(logits[i : i + 1], generators(1, seed=i), 1.0, 0.8, candidates=4).item() for i in range(12)]
    assert few.tolist() == alone
    top = torch.softmax(logits, -1).topk(4, -1).values.sum(-1)
    assert (top < 0.8).any() and (top >= 0.8).any(), "both paths must run for this check to mean anything"


def rows_of(attention: list[list[int]], first_index: int) -> DecodingRows:
    """Rows whose cache holds, in every layer, each column's index + 1 (0 where the mask says padding)."""
    mask = torch.tensor(attention)
    values = (torch.arange(mask.shape[1]) + 1).float() * mask
    cache = DynamicCache()
    for layer in range(2):
        layered = values[:, None, :, None].expand(mask.shape[0], 1, mask.shape[1], 2).clone()
        cache.update(layered, layered + 100, layer)
    rows = [Row(first_index + i, generator, [7]) for i, generator in enumerate(generators(mask.shape[0]))]
    return DecodingRows(cache, mask, rows)


def indices(rows: DecodingRows) -> list[int]:
    return [row.index for row in rows.rows]


def test_regrouped_rows_are_left_padded_and_lose_the_padding_all_kept_rows_share() -> None:
    rows = rows_of([[0, 0, 1], [0, 1, 1], [1, 1, 1]], first_index=0)
    rows.rows[1].ended = True
    rows.regroup(rows.running(), rows_of([[1, 1, 0, 1, 1]], first_index=3))
    assert rows.attention.tolist() == [[0, 0, 0, 0, 1], [0, 0, 1, 1, 1], [1, 1, 0, 1, 1]]
    assert indices(rows) == [0, 2, 3] and rows.running() == [0, 1, 2]
    keys, values = cache_layers(rows.cache)[1]
    assert keys[:, 0, :, 0].tolist() == [[0, 0, 0, 0, 3], [0, 0, 1, 2, 3], [1, 2, 0, 4, 5]]
    assert values[:, 0, :, 0].tolist() == [[0, 0, 100, 100, 103], [0, 0, 101, 102, 103], [101, 102, 100, 104, 105]]
    rows.regroup([0, 1])
    assert rows.attention.tolist() == [[0, 0, 1], [1, 1, 1]], "the columns padding in both kept rows are gone"
    assert cache_layers(rows.cache)[0][0][:, 0, :, 0].tolist() == [[0, 0, 3], [1, 2, 3]]
    assert indices(rows) == [0, 2] and rows.positions().tolist() == [[1], [3]]


def test_logits_that_are_not_finite_are_an_error_not_a_token() -> None:
    logits = torch.randn(3, 50)
    logits[1, 7] = float("nan")
    for temperature in (0.0, 1.0):
        with pytest.raises(ValueError, match=r"NaN or infinite in rows \[1\]"):
            next_tokens(logits, generators(3), temperature=temperature, top_p=0.9)


def test_regrouping_to_no_rows_leaves_an_empty_cache() -> None:
    rows = rows_of([[1, 1], [0, 1]], first_index=0)
    rows.regroup([])
    assert rows.rows == [] and rows.attention.shape[0] == 0
    assert cache_layers(rows.cache)[0][0].shape[0] == 0
