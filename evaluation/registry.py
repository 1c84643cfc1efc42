"""What a benchmark is, and the registry that makes one selectable by name: one file plus one decorator."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Item:
    """One benchmark question, ready to prompt, with what its scorer compares the answer against."""

    item_id: str
    category: str
    messages: Messages
    reference: Any
    """Benchmark-specific gold data (JSON-like), passed back to `score`."""


@dataclass(frozen=True)
class ItemScore:
    scores: dict[str, float]
    """Metric name -> score in [0, 1]; every metric the benchmark declares."""
    error: str | None = None
    """Why the answer lost points (the benchmark's own error kind), None when it scored full marks."""


class Benchmark(Protocol):
    name: str
    metrics: tuple[str, ...]
    max_new_tokens: int

    def load(self, data_dir: Path, limit: int | None = None) -> list[Item]:
        """Items from the benchmark's folder under `data_dir`; at most `limit` per category."""
        ...

    def score(self, item: Item, output: str) -> ItemScore: ...


BENCHMARKS: dict[str, Callable[[], Benchmark]] = {}


def register_benchmark(name: str) -> Callable[[Callable[[], Benchmark]], Callable[[], Benchmark]]:
    """Decorator: `@register_benchmark("bfcl")` on a Benchmark factory makes `genenv eval --benchmarks bfcl` work."""

    def decorate(factory: Callable[[], Benchmark]) -> Callable[[], Benchmark]:
        if name in BENCHMARKS:
            raise ValueError(f"benchmark {name!r} is registered twice")
        BENCHMARKS[name] = factory
        return factory

    return decorate


def get_benchmark(name: str) -> Benchmark:
    import evaluation  # noqa: F401  (registers the built-in benchmarks)

    try:
        return BENCHMARKS[name]()
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {sorted(BENCHMARKS)}") from None
