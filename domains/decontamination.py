"""Overlap checks against the evaluation benchmarks, so no seed or generated task leaks test data.

A text overlaps when, after normalisation, it equals a benchmark text or shares any 8-token shingle with one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

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
    def from_dir(cls, benchmarks_dir: str | Path) -> BenchmarkIndex:
        return cls.from_texts(benchmark_texts(benchmarks_dir))

    def __len__(self) -> int:
        return len(self._texts)

    def contains(self, text: str) -> bool:
        words = tokens(text)
        if not words:
            return False
        return " ".join(words) in self._texts or any(h in self._shingles for h in _shingles(words))


def benchmark_texts(benchmarks_dir: str | Path) -> Iterator[str]:
    """User texts of BFCL, API-Bank level-1 (dialogue user turns and expected calls) and Bamboogle questions."""
    root = Path(benchmarks_dir)
    bfcl_files = sorted(_required(root / "bfcl").glob("*.json"))
    api_bank = _required(root / "api-bank" / "level-1-api.json")
    bamboogle = _required(root / "bamboogle" / "test.jsonl")
    for path in bfcl_files:
        for row in _json_lines(path):
            for turn in row["question"]:
                yield from (m["content"] for m in turn if m.get("role") == "user")
    for item in json.loads(api_bank.read_text(encoding="utf-8")):
        for line in item["input"].splitlines():
            if line.startswith("User:"):
                yield line.removeprefix("User:").strip()
        yield item["expected_output"]
    for row in _json_lines(bamboogle):
        yield row["question"]


def _required(path: Path) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"benchmark data not found: {path}")
    return path


def _json_lines(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as lines:
        yield from (json.loads(line) for line in lines if line.strip())
