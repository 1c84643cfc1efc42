"""Prefect tasks, one module per stage. Each reads its inputs from the warehouse, calls library code
(curriculum, domains, models) and writes its outputs; they pass each other small references only."""
