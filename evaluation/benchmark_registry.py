"""What a benchmark is, and the registry that makes one selectable by name: one file plus one decorator."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from genenv.registry import Registry

Messages = list[dict[str, str]]
DEFAULT_BENCHMARKS = ("bfcl", "api_bank", "bamboogle")


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
    @property
    def name(self) -> str: ...

    @property
    def metrics(self) -> tuple[str, ...]: ...

    @property
    def max_new_tokens(self) -> int: ...

    def missing(self, data_dir: Path | None) -> str | None:
        """One line saying which data is absent and where it comes from; None when the benchmark can run."""
        ...

    def load(self, data_dir: Path | None, limit: int | None = None) -> list[Item]:
        """Items from the benchmark's data (genenv/benchmark_data.py); at most `limit` per category."""
        ...

    def score(self, item: Item, output: str) -> ItemScore: ...


BENCHMARKS: Registry[Callable[[], Benchmark]] = Registry("benchmark")
register_benchmark = BENCHMARKS.register
"""Decorator: `@register_benchmark("bfcl")` on a Benchmark factory makes `genenv eval --benchmarks bfcl` work."""


def get_benchmark(name: str) -> Benchmark:
    return BENCHMARKS.get(name)()


def present_benchmarks(names: Iterable[str], data_dir: str | Path | None) -> tuple[list[str], list[str]]:
    """(the benchmarks whose data is present, one line for each of the others saying what to supply)."""
    present, skipped = [], []
    for name in names:
        reason = get_benchmark(name).missing(Path(data_dir) if data_dir else None)
        if reason is None:
            present.append(name)
        else:
            skipped.append(f"skipping {name}: {reason}")
    return present, skipped


SAMPLE_SEED = 0
SAMPLE_RULE = "per category, the N items with the smallest sha256('<seed>:<item id>'), kept in file order"
"""How the items scored are chosen: a fixed, seeded rule, so every model is scored on the same items, the sample
does not follow the file's order (BFCL files group similar functions), and a smaller sample is part of a larger one."""


def sample_key(item_id: str, seed: int = SAMPLE_SEED) -> str:
    return hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()


def select_items(
    items: list[Item], sizes: Mapping[str, int] | None = None, limit: int | None = None, seed: int = SAMPLE_SEED
) -> list[Item]:
    """The fixed sample of `items` to score (SAMPLE_RULE): per category N = sizes[category], else `limit`, else all.

    N = 0 leaves the category out. The result keeps the benchmark's order.
    """
    by_category: dict[str, list[Item]] = {}
    for item in items:
        by_category.setdefault(item.category, []).append(item)
    chosen: set[tuple[str, str]] = set()
    for category, members in by_category.items():
        size = (sizes or {}).get(category, limit)
        ranked = sorted(members, key=lambda item: (sample_key(item.item_id, seed), item.item_id))
        chosen.update((category, item.item_id) for item in ranked[: len(ranked) if size is None else size])
    return [item for item in items if (item.category, item.item_id) in chosen]


def parse_item_sizes(text: str | None) -> dict[str, int]:
    """'simple_python=200,multiple=100,parallel=0' -> {'simple_python': 200, 'multiple': 100, 'parallel': 0}."""
    sizes: dict[str, int] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        try:
            size = int(value)
        except ValueError:
            size = -1
        if not sep or not name or size < 0:
            raise ValueError(f"{part.strip()!r}: expected category=N with N >= 0")
        if name in sizes:
            raise ValueError(f"{name!r} is given twice")
        sizes[name] = size
    return sizes


def format_item_sizes(sizes: Mapping[str, int]) -> str:
    return ",".join(f"{name}={size}" for name, size in sizes.items())


def benchmark_categories(benchmarks: Iterable[str], data_dir: str | Path | None) -> set[str]:
    """Every category the benchmarks' data holds (reads the files; loads no model)."""
    return {
        item.category for name in benchmarks for item in get_benchmark(name).load(Path(data_dir) if data_dir else None)
    }


def check_item_sizes(benchmarks: list[str], data_dir: str | Path | None, sizes: Mapping[str, int] | None) -> None:
    """Refuse sizes for a category none of the benchmarks has (a typo would otherwise score all its items)."""
    if not sizes:
        return
    categories = benchmark_categories(benchmarks, data_dir)
    unknown = [name for name in sizes if name not in categories]
    if unknown:
        raise ValueError(
            f"{format_item_sizes(sizes)}: no category {unknown} in {benchmarks}; known: {sorted(categories)}"
        )
