"""Rows of the `training` table from a trainer's step records."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from genenv.pipeline.context import GenerationRef


def training_rows(
    ref: GenerationRef, role: str, phase: str, records: list[dict], lr: float, weights: Sequence[float] = ()
) -> list[dict]:
    """One row per step record. `weights` are the per-row weights the whole phase trained with (RWR weights, GRPO
    advantages); every row of the phase carries their spread: near zero, the update barely discriminates."""
    spread = weight_spread(weights)
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
            **spread,
        }
        for r in records
    ]


def weight_spread(weights: Sequence[float]) -> dict[str, float | None]:
    if not weights:
        return {"weight_min": None, "weight_median": None, "weight_max": None}
    return {
        "weight_min": float(min(weights)),
        "weight_median": float(statistics.median(weights)),
        "weight_max": float(max(weights)),
    }


STEP_DIAGNOSTICS = ("grad_norm", "entropy", "clip_ratio", "approx_kl", "zero_spread_share")
"""What tells a user an update is learning, per optimizer step (trainers report what applies to them)."""


def _optional(value: float | None) -> float | None:
    return None if value is None else float(value)
