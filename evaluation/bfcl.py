"""BFCL (Berkeley Function Calling Leaderboard) AST evaluation: the categories, the prompts and the scoring.

The checking rules (bfcl_eval's ast_checker: decoding, the simple/multiple/parallel/irrelevance checkers and string
standardisation) live in domains.tool_call.checker, so the training reward and this evaluation judge alike.
"""

from __future__ import annotations

from pathlib import Path

from genenv.benchmark_data import INSTALL_BFCL, bfcl_dir
from genenv.domains.tool_call.checker import check
from genenv.domains.tool_call.prompts import agent_messages
from genenv.evaluation import loaders
from genenv.evaluation.benchmark_registry import Item, ItemScore, register_benchmark

CATEGORIES = ("simple_python", "multiple", "parallel", "irrelevance")


class Bfcl:
    name = "bfcl"
    metrics = ("accuracy",)
    max_new_tokens = 128

    def __init__(self, categories: tuple[str, ...] = CATEGORIES) -> None:
        self.categories = categories

    def missing(self, data_dir: Path | None) -> str | None:
        return None if bfcl_dir(data_dir) else f"bfcl: the bfcl-eval package is not installed; `{INSTALL_BFCL}`"

    def load(self, data_dir: Path | None, limit: int | None = None) -> list[Item]:
        items = []
        for category in self.categories:
            for entry in loaders.bfcl_entries(data_dir, category, limit):
                reference = {"functions": entry["function"], "ground_truth": entry["ground_truth"]}
                messages = agent_messages(entry["function"], entry["question"][0])
                items.append(Item(entry["id"], category, messages, reference))
        return items

    def score(self, item: Item, output: str) -> ItemScore:
        reference = item.reference
        verdict = check(item.category, reference["functions"], output, reference["ground_truth"])
        return ItemScore({"accuracy": float(verdict.valid)}, verdict.error)


@register_benchmark("bfcl")
def bfcl_benchmark() -> Bfcl:
    return Bfcl()
