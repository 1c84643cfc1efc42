"""Small training sets on the tiny model's vocabulary, for the data-parallel tests (in processes and on Ray workers)."""

from __future__ import annotations

from genenv.models.grpo import GroupSample
from genenv.models.rwr import WeightedExample

PROMPT_A = [1, 40, 41, 42, 43, 44]
PROMPT_B = [1, 50, 51]
SAMPLES = [GroupSample(PROMPT_A, [60 + i, 70 + i, 80], r, "a") for i, r in enumerate([1.0, 0.0, 0.0, 1.0, 0.5])]
SAMPLES += [GroupSample(PROMPT_B, [90 + i] * (i + 1), r, "b") for i, r in enumerate([1.0, 0.0, 0.5])]
"""Two GRPO groups with a spread of rewards, of several prompt and answer lengths."""
GRPO = {"lr": 1e-2, "kl_coef": 0.1, "epochs": 2, "minibatch_size": 5, "micro_batch_size": 2, "seed": 3}
EXAMPLES = [WeightedExample(PROMPT_A[: 3 + i], [60 + i, 70, 80 + i], w) for i, w in enumerate([1, 0.5, 2, 1, 0.3])]
"""Five weighted examples: in batches of 3, two ranks split the first batch 2 + 1 and the second 1 + 1."""
RWR = {"lr": 1e-2, "kl_coef": 0.1, "epochs": 2, "batch_size": 3, "seed": 3}
