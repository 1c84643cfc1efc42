"""Bootstrap intervals over items, and the fixed item sample every model is scored on (pure: no model)."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest

from genenv.evaluation.benchmark_registry import Item, check_item_sizes, parse_item_sizes, select_items
from genenv.evaluation.bfcl import Bfcl
from genenv.evaluation.bootstrap import (
    RESAMPLES,
    Interval,
    bootstrap_mean,
    paired_difference,
    pooled_paired_difference,
    seeds_and_items,
)
from genenv.evaluation.runner import ItemResult, summarise


def test_interval_of_two_items_by_hand() -> None:
    # Resampling [0, 1]: a mean of 0 or 1 each with probability 1/4, so the 2.5% and 97.5% quantiles are 0 and 1.
    interval = bootstrap_mean([0.0, 1.0])
    assert (interval.value, interval.low, interval.high, interval.n) == (0.5, 0.0, 1.0, 2)


def test_interval_matches_the_normal_approximation_for_many_items() -> None:
    # 400 items, half right: mean 0.5, standard error sqrt(0.25 / 400) = 0.025, so about 0.5 ± 1.96 * 0.025.
    interval = bootstrap_mean([1.0, 0.0] * 200)
    half_width = 1.96 * math.sqrt(0.25 / 400)
    assert interval.low == pytest.approx(0.5 - half_width, abs=0.01)
    assert interval.high == pytest.approx(0.5 + half_width, abs=0.01)


def test_interval_properties() -> None:
    scores = [float(i % 3 == 0) for i in range(30)]
    first, again = bootstrap_mean(scores), bootstrap_mean(scores)
    assert first == again
    graded = [(i * 7 % 30) / 29 for i in range(30)]  # F1-like scores: another seed moves the interval a little
    assert bootstrap_mean(graded, seed=1) != bootstrap_mean(graded)
    assert first.low <= first.value == sum(scores) / len(scores) <= first.high
    assert bootstrap_mean([0.25] * 7) == bootstrap_mean([0.25] * 7, seed=5)
    same = bootstrap_mean([0.1] * 7)
    assert same.low == same.value == same.high == sum([0.1] * 7) / 7
    widths = [(lambda i: i.high - i.low)(bootstrap_mean([1.0, 0.0, 0.0, 1.0] * n)) for n in (5, 50, 500)]
    assert widths[0] > widths[1] > widths[2] > 0
    skewed = bootstrap_mean([1.0] + [0.0] * 99)
    assert skewed.low <= skewed.value <= skewed.high
    narrower = bootstrap_mean(scores, confidence=0.5)
    assert first.low <= narrower.low <= narrower.high <= first.high
    with pytest.raises(ValueError):
        bootstrap_mean([])


def test_paired_difference_uses_the_items_both_scored() -> None:
    a = {f"i{k}": float(k % 2) for k in range(40)}
    b = {**a, "i0": 1.0, "i2": 1.0, "only-b": 1.0}
    diff = paired_difference(a, b)
    assert diff.n == 40 and diff.value == pytest.approx(2 / 40)
    assert 0.0 <= diff.low <= diff.value <= diff.high
    # The same answers give a zero-width interval at 0 however many items.
    assert paired_difference(a, dict(a)) == type(diff)(0.0, 0.0, 0.0, 40)
    with pytest.raises(ValueError, match="share no scored item"):
        paired_difference({"x": 1.0}, {"y": 1.0})


def test_a_difference_pooled_over_seeds_resamples_the_seeds_and_the_items() -> None:
    a0 = {f"i{k}": 0.0 for k in range(30)}
    b0 = {f"i{k}": float(k < 12) for k in range(30)}  # seed 0: +12 items
    a1 = {**a0, "i29": 1.0, "extra": 1.0}
    b1 = {f"i{k}": float(k >= 26) for k in range(30)}  # seed 1: +3 (i29 right in both)
    pooled = pooled_paired_difference([(a0, b0), (a1, b1)])
    per_item = [((b0[i] - a0[i]) + (b1[i] - a1[i])) / 2 for i in sorted(a0)]
    items_only = bootstrap_mean(per_item)
    assert pooled.n == 30 and pooled.value == pytest.approx((12 + 3) / 60) == pytest.approx(items_only.value)
    assert pooled.low < items_only.low and pooled.high > items_only.high  # the seeds disagree: 12 against 3
    assert pooled_paired_difference([(a0, b0)]) == paired_difference(a0, b0)
    with pytest.raises(ValueError, match="share no scored item"):
        pooled_paired_difference([(a0, b0), ({"x": 1.0}, {"x": 0.0})])


def test_seeds_that_disagree_widen_an_interval_that_items_alone_would_close() -> None:
    """Seed 0 gains every item, seed 1 none: over items alone the pooled difference is exactly 0.5 on every
    resample; drawing the seeds too gives 0, 0.5 or 1, so the interval spans [0, 1]."""
    items = [f"i{k}" for k in range(50)]
    zero = dict.fromkeys(items, 0.0)
    pooled = pooled_paired_difference([(zero, dict.fromkeys(items, 1.0)), (zero, zero)])
    assert (pooled.value, pooled.low, pooled.high) == (0.5, 0.0, 1.0)
    assert bootstrap_mean([0.5] * 50) == Interval(0.5, 0.5, 0.5, 50)


def test_the_mean_of_categories_draws_the_seeds_once_for_every_category() -> None:
    simple = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0]])  # seed 0: +0.75, seed 1: +0.25
    irrelevance = np.array([[0.0, 0.0], [1.0, 1.0]])  # seed 0: 0, seed 1: +1
    both = seeds_and_items([simple, irrelevance])
    assert both.value == pytest.approx((0.5 + 0.5) / 2) and both.n == 6
    assert both.low <= both.value <= both.high
    # The same seed draw for both: a resample of seed 0 twice gives (0.75 + 0) / 2 at most, never 0.75 and 1 at once.
    assert both.high <= (1.0 + 1.0) / 2 and both.low >= 0.0
    with pytest.raises(ValueError, match="same seeds"):
        seeds_and_items([simple, irrelevance[:1]])


def test_summary_rows_carry_the_interval() -> None:
    results = [ItemResult("bfcl", "multiple", f"m{i}", "", {"accuracy": float(i < 3)}, None) for i in range(10)]
    (summary,) = summarise(results)
    assert (summary.value, summary.n) == (0.3, 10)
    interval = bootstrap_mean([float(i < 3) for i in range(10)], RESAMPLES)
    assert (summary.ci_low, summary.ci_high) == (interval.low, interval.high)


def _items(category: str, n: int) -> list[Item]:
    return [Item(f"{category}_{i}", category, [], None) for i in range(n)]


def test_sample_is_by_hashed_id_not_file_order() -> None:
    items = _items("simple_python", 50) + _items("multiple", 30) + _items("parallel", 10)
    chosen = select_items(items, {"simple_python": 5, "parallel": 0}, limit=4)
    by_category = {c: [i.item_id for i in chosen if i.category == c] for c in ("simple_python", "multiple", "parallel")}
    expected = sorted((hashlib.sha256(f"0:simple_python_{i}".encode()).hexdigest(), i) for i in range(50))[:5]
    assert set(by_category["simple_python"]) == {f"simple_python_{i}" for _, i in expected}
    assert by_category["simple_python"] != [f"simple_python_{i}" for i in range(5)]
    assert len(by_category["multiple"]) == 4 and by_category["parallel"] == []
    assert [i for i in items if i in chosen] == chosen  # the benchmark's order is kept
    # Stable (same sample every call), nested (a smaller sample is part of a larger one), seeded.
    assert select_items(items, {"simple_python": 5, "parallel": 0}, limit=4) == chosen
    ids = {limit: {i.item_id for i in select_items(items, limit=limit)} for limit in (3, 10)}
    assert ids[3] < ids[10]
    assert select_items(items, limit=5, seed=1) != select_items(items, limit=5)
    assert select_items(items) == items and select_items(items, {"multiple": 100}) == items


def test_item_sizes_are_parsed_and_checked(benchmark_dir: Path) -> None:
    assert parse_item_sizes("simple_python=200, multiple=100,irrelevance=100,parallel=0") == {
        "simple_python": 200,
        "multiple": 100,
        "irrelevance": 100,
        "parallel": 0,
    }
    assert parse_item_sizes("") == {} and parse_item_sizes(None) == {}
    for bad in ("simple_python", "simple_python=-1", "simple_python=x", "=3", "a=1,a=2"):
        with pytest.raises(ValueError):
            parse_item_sizes(bad)
    check_item_sizes(["bfcl"], benchmark_dir, {"simple_python": 3, "parallel": 0})
    with pytest.raises(ValueError, match=r"no category \['simple'\]"):
        check_item_sizes(["bfcl"], benchmark_dir, {"simple": 3})


def test_real_bfcl_sample_is_spread_over_the_file(benchmark_dir: Path) -> None:
    items = select_items(Bfcl().load(benchmark_dir), {"simple_python": 200, "multiple": 100, "irrelevance": 100})
    counts = {c: sum(i.category == c for i in items) for c in ("simple_python", "multiple", "irrelevance", "parallel")}
    assert counts == {"simple_python": 200, "multiple": 100, "irrelevance": 100, "parallel": 200}
    positions = [int(i.item_id.rsplit("_", 1)[1]) for i in items if i.category == "simple_python"]
    assert min(positions) < 20 and max(positions) > 380  # not the first 200 of the file
