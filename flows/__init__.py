"""Prefect flows. Thin: they wire the stages in tasks/ in the order of the pipeline diagram."""
