"""Rows of the `training` table from a trainer's step records."""

from __future__ import annotations

from tasks.context import GenerationRef


def training_rows(ref: GenerationRef, role: str, phase: str, records: list[dict], lr: float) -> list[dict]:
    return [
        {
            "run_id": ref.run_id,
            "generation": ref.generation,
            "role": role,
            "phase": phase,
            "step": int(r["step"]),
            "loss": float(r["loss"]),
            "kl": None if r.get("kl") is None else float(r["kl"]),
            "n_rows": int(r["n_rows"]),
            "lr": lr,
            "seconds": float(r["seconds"]),
        }
        for r in records
    ]
