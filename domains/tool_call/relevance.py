"""Is the request the kind of request the called function serves? A function forced onto a request no offered function
serves ("Can I get a cup of tea from the library?" -> sports.fixtures(team="library")) shares no keyword with it
that the rules could miss, so this asks a sentence encoder instead.

A call fits as well as the request's nearest neighbour among REFERENCE_REQUESTS requests the catalog writes for the
called function (catalog.py, their values included), by cosine similarity of all-MiniLM-L6-v2 embeddings; a function
outside the catalog is represented by its name and description. An answer fits as well as its worst call. Below
FIT_MIN the answer is rejected as `function_unrelated`: on the earlier hand-labelled samples (bench/answer_check.py)
0.45 rejects none of the shipped seeds (their lowest fit is 0.48) and none of 600 catalog draws (lowest 0.48), and 7
of the 12 wrong tasks of bench/data/labelled_c45_g5_g8_tasks.jsonl (fits 0.16 to 0.44), none of its right ones.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from functools import cache
from typing import Any

import torch

from genenv.domains.tool_call.calls import Call
from genenv.domains.tool_call.catalog import CATALOG
from genenv.models.sentence import SentenceEncoder

FIT_MIN = 0.45
REFERENCE_REQUESTS = 60


class Relevance:
    """The fit of calls to a request; the encoder loads, and each function's references are embedded, on first use
    (once per encoder and process: a domain is built on every `ref.domain`)."""

    def __init__(self, load_encoder: Callable[[], SentenceEncoder]) -> None:
        self._load_encoder = load_encoder
        self._encoder: SentenceEncoder | None = None
        self._lock = threading.Lock()

    def fit(self, calls: list[Call], functions: list[dict[str, Any]], request: str) -> float:
        """The cosine similarity of `request` to its nearest reference request of each called function, the lowest
        over the calls (1.0 for no call: `[]` is judged by the other checks)."""
        if not calls:
            return 1.0
        by_name = {f["name"]: f for f in functions}
        encoder = self._loaded()
        asked = encoder.encode([request])[0]
        return min(float((_references(encoder, by_name[call.name]) @ asked).max()) for call in calls)

    def unrelated(self, calls: list[Call], functions: list[dict[str, Any]], request: str) -> bool:
        return self.fit(calls, functions, request) < FIT_MIN

    def _loaded(self) -> SentenceEncoder:
        with self._lock:
            if self._encoder is None:
                self._encoder = self._load_encoder()
            return self._encoder


def _references(encoder: SentenceEncoder, function: dict[str, Any]) -> torch.Tensor:
    """The embedded reference requests of `function`, drawn and embedded once per encoder and function."""
    return _embedded_references(encoder, function["name"], function.get("description", ""))


@cache
def _embedded_references(encoder: SentenceEncoder, name: str, description: str) -> torch.Tensor:
    return encoder.encode(reference_requests({"name": name, "description": description}))


def reference_requests(function: dict[str, Any]) -> list[str]:
    """Distinct requests the catalog writes for `function` (a seeded draw, the same in every process), or its name and
    description when it is not a catalog function."""
    entry = CATALOG.get(function["name"])
    if entry is None:
        return [f"{function['name'].replace('.', ' ').replace('_', ' ')}: {function.get('description', '')}"]
    rng = random.Random(f"relevance/{function['name']}")
    return list(dict.fromkeys(entry.make(rng)[0] for _ in range(REFERENCE_REQUESTS)))
