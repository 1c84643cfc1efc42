"""Bamboogle two-hop QA: exact match after SQuAD normalisation and token F1, each the best over the gold answers.

The answer is the output's first non-empty line, without a leading "Answer:" (small models add one).
"""

from __future__ import annotations

import re
from pathlib import Path

from genenv.benchmark_data import folder_file, missing_folder_set
from genenv.domains.scoring import normalize_answer, token_f1
from genenv.evaluation import benchmark_prompts, loaders
from genenv.evaluation.benchmark_registry import Item, ItemScore, register_benchmark

CATEGORY = "test"
_ANSWER_PREFIX = re.compile(r"^\s*(final\s+)?answer\s*:\s*", re.IGNORECASE)


def extract_answer(output: str) -> str:
    line = next((line for line in output.splitlines() if line.strip()), "")
    return _ANSWER_PREFIX.sub("", line).strip()


def exact_match(prediction: str, golds: list[str]) -> float:
    return float(any(normalize_answer(prediction) == normalize_answer(gold) for gold in golds))


def best_f1(prediction: str, golds: list[str]) -> float:
    return max((token_f1(prediction, gold) for gold in golds), default=0.0)


class Bamboogle:
    name = "bamboogle"
    metrics = ("exact_match", "f1")
    max_new_tokens = 32

    def missing(self, data_dir: Path | None) -> str | None:
        return None if folder_file(data_dir, "bamboogle") else missing_folder_set(data_dir, "bamboogle")

    def load(self, data_dir: Path | None, limit: int | None = None) -> list[Item]:
        rows = loaders.bamboogle(data_dir, limit)
        return [
            Item(str(row["id"]), CATEGORY, benchmark_prompts.bamboogle_messages(row["question"]), row["golden_answers"])
            for row in rows
        ]

    def score(self, item: Item, output: str) -> ItemScore:
        answer = extract_answer(output)
        scores = {"exact_match": exact_match(answer, item.reference), "f1": best_f1(answer, item.reference)}
        return ItemScore(scores, None if scores["exact_match"] == 1.0 else "wrong_answer")


@register_benchmark("bamboogle")
def bamboogle_benchmark() -> Bamboogle:
    return Bamboogle()
