"""GenEnv g8 − GenEnv-Random g8 on BFCL, pooled over seeds (per item: the mean over seeds of the difference), per
category and on the mean of the three categories (items resampled within each category), 95% percentile
bootstrap, 2000 resamples, seed 0. Issue 27's c27-* runs: python bench/mean_of_categories.py data/after/warehouse"""

import sys

import numpy as np

from genenv.warehouse.query import query
from genenv.warehouse.store import Warehouse

SQL = """
SELECT regexp_extract(e.run_id, 'c27-([a-z]+)-s([0-9])', 1) AS arm,
       regexp_extract(e.run_id, 'c27-([a-z]+)-s([0-9])', 2)::INT AS seed,
       i.category, i.item_id, i.score
FROM evaluation_items i JOIN evaluations e USING (eval_id)
WHERE e.run_id LIKE 'c27-%' AND e.generation = 8 AND i.category IN ('simple_python', 'multiple', 'irrelevance')
"""

frame = query(Warehouse(sys.argv[1]), SQL)
seeds = sorted(set(frame["seed"]))
diffs = {}
for category in ("simple_python", "multiple", "irrelevance"):
    per_seed = []
    for seed in seeds:
        rows = frame.filter((frame["category"] == category) & (frame["seed"] == seed))
        score = {
            arm: dict(zip(*rows.filter(rows["arm"] == arm).select("item_id", "score"), strict=True))
            for arm in ("genenv", "random")
        }
        items = sorted(set(score["genenv"]) & set(score["random"]))
        per_seed.append(np.array([score["genenv"][i] - score["random"][i] for i in items]))
    diffs[category] = np.mean(per_seed, axis=0)
    print(f"{category}: seeds {seeds}, {len(diffs[category])} paired items")
rng = np.random.default_rng(0)
draws = {c: np.array([d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)]) for c, d in diffs.items()}
for category, d in diffs.items():
    low, high = np.percentile(draws[category], [2.5, 97.5])
    print(f"GenEnv − Random, {category}: {d.mean():+.3f} [{low:+.3f}, {high:+.3f}]")
mean_draws = np.mean([draws[c] for c in diffs], axis=0)
low, high = np.percentile(mean_draws, [2.5, 97.5])
mean = np.mean([d.mean() for d in diffs.values()])
print(f"GenEnv − Random, mean of the three: {mean:+.3f} [{low:+.3f}, {high:+.3f}]")
