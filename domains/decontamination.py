"""Overlap checks against the evaluation benchmarks, so no seed or generated task leaks test data.

A text overlaps when, after normalisation, it equals a benchmark text or shares any 8-token shingle with one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from genenv.benchmark_data import FOLDER_SETS, INSTALL_BFCL, bfcl_dir, folder_file, missing_folder_set
from genenv.domains.base import Domain

SHINGLE_TOKENS = 8
_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _shingles(words: list[str]) -> Iterator[int]:
    for start in range(len(words) - SHINGLE_TOKENS + 1):
        yield hash(tuple(words[start : start + SHINGLE_TOKENS]))


class BenchmarkIndex:
    """Normalised benchmark texts and the hashes of their 8-token shingles."""

    def __init__(self, texts: set[str], shingles: set[int]) -> None:
        self._texts = texts
        self._shingles = shingles

    @classmethod
    def empty(cls) -> BenchmarkIndex:
        return cls(set(), set())

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> BenchmarkIndex:
        normalised: set[str] = set()
        shingles: set[int] = set()
        for text in texts:
            words = tokens(text)
            if words:
                normalised.add(" ".join(words))
                shingles.update(_shingles(words))
        return cls(normalised, shingles)

    @classmethod
    def from_dir(cls, benchmarks_dir: str | Path | None) -> BenchmarkIndex:
        return cls.from_texts(benchmark_texts(benchmarks_dir))

    def __len__(self) -> int:
        return len(self._texts)

    def contains(self, text: str) -> bool:
        words = tokens(text)
        if not words:
            return False
        return " ".join(words) in self._texts or any(h in self._shingles for h in _shingles(words))


_DOMAIN_INDEXES: dict[tuple[str, str], BenchmarkIndex] = {}


def domain_index(domain: Domain, benchmarks_dir: str) -> BenchmarkIndex:
    """What `domain`'s tasks must not overlap (its `benchmark_texts`), built once per process and domain: seeding and
    every generation check against it."""
    key = (domain.name, benchmarks_dir)
    if key not in _DOMAIN_INDEXES:
        _DOMAIN_INDEXES[key] = BenchmarkIndex.from_texts(domain.benchmark_texts(benchmarks_dir))
    return _DOMAIN_INDEXES[key]


NOT_ITEM_FILES = {"BFCL_v4_format_sensitivity.json"}
"""bfcl_eval/data files that are not one item a line (that one lists item ids per category)."""


def checked_sets(benchmarks_dir: str | Path | None) -> list[str]:
    """The benchmark sets a decontamination against `benchmarks_dir` reads: BFCL and the folder sets present."""
    _existing(benchmarks_dir)
    bfcl = ["bfcl"] if bfcl_dir(benchmarks_dir) else []
    return bfcl + [name for name in FOLDER_SETS if folder_file(benchmarks_dir, name)]


def set_status(benchmarks_dir: str | Path | None) -> dict[str, str | None]:
    """BFCL and the folder sets, each mapped to None where `benchmark_texts` reads it, else to a line saying why not."""
    checked = checked_sets(benchmarks_dir)
    status: dict[str, str | None] = {"bfcl": None if "bfcl" in checked else f"bfcl: not installed (`{INSTALL_BFCL}`)"}
    for name in FOLDER_SETS:
        status[name] = None if name in checked else missing_folder_set(benchmarks_dir, name)
    return status


def benchmark_texts(benchmarks_dir: str | Path | None) -> Iterator[str]:
    """User texts of BFCL (every category), API-Bank level-1 (dialogue user turns and expected calls) and Bamboogle
    questions, from the sets present (checked_sets): BFCL from the bfcl-eval package unless the folder has a copy."""
    _existing(benchmarks_dir)
    bfcl = bfcl_dir(benchmarks_dir)
    for path in sorted(bfcl.glob("BFCL_v4_*.json")) if bfcl else []:
        if path.name in NOT_ITEM_FILES:
            continue
        for row in _json_lines(path):
            for turn in row["question"]:
                yield from (m["content"] for m in turn if m.get("role") == "user")
    api_bank = folder_file(benchmarks_dir, "api-bank")
    for item in json.loads(api_bank.read_text(encoding="utf-8")) if api_bank else []:
        for line in item["input"].splitlines():
            if line.startswith("User:"):
                yield line.removeprefix("User:").strip()
        yield item["expected_output"]
    bamboogle = folder_file(benchmarks_dir, "bamboogle")
    for row in _json_lines(bamboogle) if bamboogle else []:
        yield row["question"]


def _existing(benchmarks_dir: str | Path | None) -> None:
    if benchmarks_dir and not Path(benchmarks_dir).is_dir():
        raise FileNotFoundError(f"benchmark data not found: {benchmarks_dir}")


def _json_lines(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as lines:
        yield from (json.loads(line) for line in lines if line.strip())
