"""Benchmark evaluation: load a benchmark folder, generate answers in batches, score them as the benchmark does.

Importing this package registers the built-in benchmarks (bfcl, api_bank, bamboogle).
"""

from genenv.evaluation import api_bank, bamboogle, bfcl  # noqa: F401
