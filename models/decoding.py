"""The rows a generation call is decoding, over one KV cache that rows join and leave between steps (continuous
batching): a batch never waits on its longest answer, because finished rows make room for queued prompts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache


@dataclass
class Row:
    """One answer being decoded: its prompt's place in the call, the random stream it samples from, the tokens
    generated so far, and whether its answer is complete."""

    index: int
    generator: torch.Generator
    tokens: list[int] = field(default_factory=list)
    ended: bool = False


@dataclass
class DecodingRows:
    """Rows of one KV cache: `cache` holds `attention.shape[1]` columns per row, and `attention` marks which are
    the row's own tokens (padding anywhere is 0). Ended rows keep their place (and keep being computed, their
    tokens ignored) until the rows are regrouped, because moving the cache costs as much as many decoding steps
    of a row."""

    cache: DynamicCache
    attention: torch.Tensor
    rows: list[Row]

    def positions(self) -> torch.Tensor:
        """The next token's position in each row: its own tokens so far (how `generate` counts them)."""
        return self.attention.sum(-1, keepdim=True)

    def next_inputs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(input ids, positions) of the next decoding step: each row's last token, at the row's next position;
        the mask grows by the column they fill."""
        positions = self.positions()
        self.attention = torch.cat([self.attention, torch.ones_like(positions)], dim=-1)
        last = torch.tensor([row.tokens[-1] for row in self.rows], device=self.attention.device).unsqueeze(-1)
        return last, positions

    def append(self, new: torch.Tensor) -> None:
        """Record each row's next token (the column for it joins the cache at the next forward pass)."""
        for row, token in zip(self.rows, new.tolist(), strict=True):
            row.tokens.append(token)

    def generators(self) -> list[torch.Generator]:
        return [row.generator for row in self.rows]

    def running(self) -> list[int]:
        """Positions of the rows still answering."""
        return [i for i, row in enumerate(self.rows) if not row.ended]

    def regroup(self, keep: Sequence[int], joining: DecodingRows | None = None) -> None:
        """Keep only the rows at `keep`, then the `joining` rows after them, in one move of the cache: columns
        that are padding in every kept row go, and the narrower side is left-padded to the wider."""
        keep = list(keep)
        attention = self.attention[keep]
        used = attention.any(0).nonzero()
        start = int(used[0]) if len(used) else attention.shape[1]
        rows = torch.tensor(keep, dtype=torch.long, device=attention.device)
        others = [] if joining is None else [joining]
        width = max([attention.shape[1] - start] + [o.attention.shape[1] for o in others])
        self.attention = _stacked([attention[:, start:]] + [o.attention for o in others], width)
        for index, layer in enumerate(self.cache.layers):
            joining_layers = [o.cache.layers[index] for o in others]
            layer.keys = _stacked([layer.keys[rows, :, start:]] + [j.keys for j in joining_layers], width)
            layer.values = _stacked([layer.values[rows, :, start:]] + [j.values for j in joining_layers], width)
        self.rows = [self.rows[i] for i in keep] + [row for o in others for row in o.rows]


def cache_layers(cache: DynamicCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each layer's (keys, values), [rows, heads, columns, head dim]."""
    return [(layer.keys, layer.values) for layer in cache.layers]


def _stacked(parts: list[torch.Tensor], width: int) -> torch.Tensor:
    """The parts' rows one after another, each left-padded with zeros to `width` columns (dim 2 of a cache
    layer, dim 1 of a mask)."""
    dim = 2 if parts[0].dim() == 4 else 1
    padded = []
    for part in parts:
        shape = list(part.shape)
        shape[dim] = width - part.shape[dim]
        padded.append(torch.cat([part.new_zeros(shape), part], dim=dim) if shape[dim] else part)
    return padded[0] if len(padded) == 1 else torch.cat(padded)


def next_tokens(
    logits: torch.Tensor,
    generators: Sequence[torch.Generator],
    temperature: float,
    top_p: float,
    candidates: int = 64,
) -> torch.Tensor:
    """One token per row: the argmax when greedy (temperature 0), else a draw from the row's own generator after
    temperature and nucleus (top-p) filtering, so a row's draw does not depend on which rows decode beside it.

    The nucleus is looked for among the `candidates` likeliest tokens, and only rows whose candidates hold less
    than top_p of the mass sort their whole vocabulary (a full sort costs about a forward pass on CPU, and
    `torch.multinomial` half that again); the draw inverts the nucleus's cumulative mass."""
    scores = logits.float()  # also for the argmax: faster on CPU than over bf16
    if not torch.isfinite(scores).all():
        bad = (~torch.isfinite(scores)).any(-1).nonzero().flatten().tolist()
        raise ValueError(f"the model's logits are NaN or infinite in rows {bad}: nothing to sample from")
    if temperature <= 0:
        return scores.argmax(-1)
    probabilities = (scores / temperature).softmax(-1)
    uniform = torch.cat([torch.rand(1, generator=g, device=g.device) for g in generators]).to(scores.device)
    if top_p >= 1.0:
        return _drawn(probabilities, torch.arange(probabilities.shape[-1], device=scores.device), 1.0, uniform)
    top, order = probabilities.topk(min(candidates, probabilities.shape[-1]), dim=-1)
    beyond = top.sum(-1) < top_p
    picked = torch.empty_like(beyond, dtype=torch.long)
    if not beyond.all():
        picked[~beyond] = _drawn(top[~beyond], order[~beyond], top_p, uniform[~beyond])
    if beyond.any():
        ranked, tokens = probabilities[beyond].sort(-1, descending=True)
        picked[beyond] = _drawn(ranked, tokens, top_p, uniform[beyond])
    return picked


def _drawn(ranked: torch.Tensor, tokens: torch.Tensor, top_p: float, uniform: torch.Tensor) -> torch.Tensor:
    """Per row, the token drawn at `uniform` from the nucleus of `ranked` probabilities (of `tokens`, descending
    when top_p < 1): the tokens whose likelier tokens hold less than top_p of the mass, as `generate`'s
    TopPLogitsWarper keeps them; all tokens at top_p 1."""
    if top_p < 1.0:
        ranked = ranked.masked_fill(ranked.cumsum(-1) - ranked >= top_p, 0.0)
    cumulative = ranked.double().cumsum(-1)  # in fp32 the sum over a vocabulary stops growing at its tail
    at = (uniform.double() * cumulative[:, -1]).unsqueeze(-1)
    rank = torch.searchsorted(cumulative, at, right=True).clamp(max=ranked.shape[-1] - 1)
    return tokens.expand_as(ranked).gather(-1, rank).squeeze(-1)
