"""Versioned Parquet (Delta Lake) tables for every task, trajectory, reward and checkpoint, read with DuckDB."""
