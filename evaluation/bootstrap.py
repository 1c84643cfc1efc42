"""Bootstrap intervals over benchmark items (numpy only, no model): how far a score could move with other items.

A score is the mean of its items' scores. Its interval resamples the items with replacement `RESAMPLES` times (a
fixed seed, so the same scores always give the same interval) and takes the percentile interval of the resampled
means. Two models scored on the same items are compared by the mean of their per-item differences (B - A), with
the same resampling over the items both scored: the paired interval, much narrower than two separate ones when
the models agree on most items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0
METHOD = f"percentile bootstrap over items, {RESAMPLES} resamples, seed {SEED}"
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
    """The paired difference pooled over run seeds: per item the mean over the pairs (a_s, b_s) of b_s - a_s, over the
    items every model scored, then the paired bootstrap over those items.

    Items are resampled, seeds are not (two or three seeds leave nothing to resample), so the interval says how far the
    seeds' mean difference could move with other items.
    """
    common = sorted(set.intersection(*(set(a) & set(b) for a, b in pairs))) if pairs else []
    if not common:
        raise ValueError("the models share no scored item")
    return bootstrap_mean(
        [sum(b[i] - a[i] for a, b in pairs) / len(pairs) for i in common], resamples, confidence, seed
    )
