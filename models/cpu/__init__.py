"""CPU-speed machinery under the model API: weights laid out for oneDNN's kernels, a KV cache that appends in place,
shapes padded so compiled kernels and freed heap blocks are reused, oneDNN's primitive cache bounded. Nothing here
changes a number the model computes; it imports nothing else of genenv, and the model API (models/policy.py,
models/transformers_backend.py) calls it."""
