"""Generate answers to benchmark items in batches (greedy) and score them; aggregate scores per category."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from genenv.evaluation.benchmark_registry import DEFAULT_BENCHMARKS, Benchmark, Item
from genenv.evaluation.bootstrap import bootstrap_mean
from genenv.models.sampling import GenerationBackend, SamplingSettings

ROLE = "agent"
__all__ = ["DEFAULT_BENCHMARKS", "ItemResult", "Summary", "run_benchmark", "scored", "summarise"]


@dataclass(frozen=True)
class ItemResult:
    benchmark: str
    category: str
    item_id: str
    output: str
    scores: dict[str, float]
    error: str | None
    answer_key: str | None = None
    """What decided `output` (tasks.benchmarks.answer_key), when the caller keys its answers."""


@dataclass(frozen=True)
class Summary:
    benchmark: str
    category: str
    metric: str
    value: float
    n: int
    ci_low: float
    """95% percentile bootstrap interval of `value` over the items (evaluation.bootstrap)."""
    ci_high: float


def run_benchmark(
    backend: GenerationBackend,
    benchmark: Benchmark,
    items: list[Item],
    progress: Callable[[int], None] | None = None,
) -> list[ItemResult]:
    """The agent's greedy answer to every item, scored by the benchmark."""
    sampling = SamplingSettings(max_new_tokens=benchmark.max_new_tokens, temperature=0.0)
    completions = backend.generate(ROLE, [item.messages for item in items], sampling, progress)
    return [scored(benchmark, item, completion.text) for item, completion in zip(items, completions, strict=True)]


def scored(benchmark: Benchmark, item: Item, output: str) -> ItemResult:
    """One answer, generated now or earlier, scored by the benchmark's current checker."""
    score = benchmark.score(item, output)
    return ItemResult(benchmark.name, item.category, item.item_id, output, score.scores, score.error)


def summarise(results: list[ItemResult]) -> list[Summary]:
    """Mean of each metric per (benchmark, category) with its bootstrap interval over the items; first-seen order."""
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for result in results:
        for metric, value in result.scores.items():
            groups[(result.benchmark, result.category, metric)].append(value)
    summaries = []
    for key, values in groups.items():
        interval = bootstrap_mean(values)
        summaries.append(Summary(*key, interval.value, interval.n, interval.low, interval.high))
    return summaries
