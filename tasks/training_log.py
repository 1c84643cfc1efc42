"""Rows of the `training` table from a trainer's step records."""

from __future__ import annotations

from genenv.tasks.context import GenerationRef


def training_rows(ref: GenerationRef, role: str, phase: str, records: list[dict], lr: float) -> list[dict]:
    return [
        {
            "run_id": ref.run_id,
            "generation": ref.generation,
            "role": role,
            "phase": phase,
            "step": int(r["step"]),
            "loss": float(r["loss"]),
            "kl": _optional(r.get("kl")),
            "n_rows": int(r["n_rows"]),
            "lr": lr,
            "seconds": float(r["seconds"]),
            **{name: _optional(r.get(name)) for name in STEP_DIAGNOSTICS},
        }
        for r in records
    ]


STEP_DIAGNOSTICS = ("grad_norm", "entropy", "clip_ratio", "approx_kl", "zero_spread_share")
"""What tells a user an update is learning, per optimizer step (trainers report what applies to them)."""


def _optional(value: float | None) -> float | None:
    return None if value is None else float(value)
