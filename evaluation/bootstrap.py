"""Bootstrap intervals over benchmark items (numpy only, no model): how far a score could move with other items.

A score is the mean of its items' scores. Its interval resamples the items with replacement `RESAMPLES` times (a
fixed seed, so the same scores always give the same interval) and takes the percentile interval of the resampled
means. Two models scored on the same items are compared by the mean of their per-item differences (B - A), with
the same resampling over the items both scored: the paired interval, much narrower than two separate ones when
the models agree on most items. Over several run seeds the resampling is hierarchical: seeds, then items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0
METHOD = f"percentile bootstrap over seeds and items, {RESAMPLES} resamples, seed {SEED}"
_CELLS_PER_CHUNK = 1_000_000
"""Resampled item indices held in memory at once (8 MB); the chunking depends on n only, so results do not."""


@dataclass(frozen=True)
class Interval:
    value: float
    """The mean of the scores (of the differences, for a paired interval)."""
    low: float
    high: float
    n: int
    """Items the interval is over."""


def bootstrap_mean(
    scores: Sequence[float], resamples: int = RESAMPLES, confidence: float = CONFIDENCE, seed: int = SEED
) -> Interval:
    """The mean of `scores` and its percentile bootstrap interval; low <= value <= high always holds."""
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError("bootstrap_mean needs a non-empty list of scores")
    if resamples < 1 or not 0.0 < confidence < 1.0:
        raise ValueError(f"need resamples >= 1 and 0 < confidence < 1 (got {resamples}, {confidence})")
    n = int(values.size)
    mean = float(sum(float(v) for v in values) / n)  # as summarise computes a score, so value == the stored score
    if np.all(values == values[0]):
        return Interval(mean, mean, mean, n)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    chunk = max(1, _CELLS_PER_CHUNK // n)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        means[start:stop] = values[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(mean, min(float(low), mean), max(float(high), mean), n)


def paired_difference(
    a: Mapping[str, float],
    b: Mapping[str, float],
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> Interval:
    """Mean of b[item] - a[item] over the items both scored, with its paired bootstrap interval."""
    return pooled_paired_difference([(a, b)], resamples, confidence, seed)


def pooled_paired_difference(
    pairs: Sequence[tuple[Mapping[str, float], Mapping[str, float]]],
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> Interval:
    """The paired difference pooled over run seeds: the mean over the pairs (a_s, b_s) and the items every model
    scored of b_s[item] - a_s[item], with a hierarchical bootstrap (`seeds_and_items`): the interval says how far it
    could move with other seeds and other items. One pair is the paired interval over items."""
    common = sorted(set.intersection(*(set(a) & set(b) for a, b in pairs))) if pairs else []
    if not common:
        raise ValueError("the models share no scored item")
    differences = np.array([[b[i] - a[i] for i in common] for a, b in pairs], dtype=np.float64)
    return seeds_and_items([differences], resamples, confidence, seed)


def seeds_and_items(
    differences: Sequence[np.ndarray], resamples: int = RESAMPLES, confidence: float = CONFIDENCE, seed: int = SEED
) -> Interval:
    """The mean over groups (benchmark categories) of each group's mean paired difference, and its hierarchical
    bootstrap interval. Each group is a [seeds, items] array, the same seeds in every group. A resample draws the
    seeds with replacement (the same draw for every group: a seed is one run) and then, within each group, the items
    with replacement. With one seed only the items are resampled, exactly as `bootstrap_mean` does."""
    if len(differences) == 1 and differences[0].shape[0] == 1:
        return bootstrap_mean(differences[0][0].tolist(), resamples, confidence, seed)
    seeds = {d.shape[0] for d in differences}
    if len(seeds) != 1 or any(d.size == 0 for d in differences):
        raise ValueError("every group needs the same seeds and at least one item")
    count = seeds.pop()
    value = float(np.mean([d.mean() for d in differences]))
    rng = np.random.default_rng(seed)
    chosen = rng.integers(0, count, size=(resamples, count))
    means = np.zeros(resamples)
    for d in differences:
        items = d.shape[1]
        chunk = max(1, _CELLS_PER_CHUNK // (items * count))
        for start in range(0, resamples, chunk):
            stop = min(resamples, start + chunk)
            per_item = d[chosen[start:stop]].mean(axis=1)  # [chunk, items]: each item over the drawn seeds
            drawn = rng.integers(0, items, size=(stop - start, items))
            means[start:stop] += np.take_along_axis(per_item, drawn, axis=1).mean(axis=1)
    means /= len(differences)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(value, min(float(low), value), max(float(high), value), sum(d.shape[1] for d in differences))
