"""Prefect artifacts: what the UI shows of each generation, and live progress of long stages.

Progress cards live while a stage runs and are removed when it ends.
Per committed generation (the commit stage publishes them): a summary table, the p̂ histogram, success and
α-band share across generations, the loss curves and the generation's snapshot (the Delta version of each table).
Charts are markdown (unicode bars, and an inline SVG image for losses) because the UI renders markdown and the
warehouse, not Prefect, holds the data.
Keys are `genenv-<run>-g<g>-<what>`; the cross-generation trend is one key per run, versioned each generation.
"""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any, cast
from uuid import UUID

import polars as pl
from prefect import get_client
from prefect.artifacts import (
    create_progress_artifact,
    update_progress_artifact,
)
from prefect.context import FlowRunContext, TaskRunContext
from tqdm.auto import tqdm

BLOCKS = " ▏▎▍▌▋▊▉█"
SPARKS = "▁▂▃▄▅▆▇█"
HISTOGRAM_BINS = 10
CHART_MIN_POINTS = 5


def artifact_key(run_id: str, *parts: object) -> str:
    """Prefect keys allow lowercase letters, digits and dashes only."""
    raw = "-".join(["genenv", run_id, *map(str, parts)]).lower()
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", raw)).strip("-")


def bar(share: float | None, width: int = 20) -> str:
    """A horizontal bar of `share` (0..1) in eighths of a character."""
    if share is None:
        return ""
    eighths = round(max(0.0, min(1.0, share)) * width * 8)
    return "█" * (eighths // 8) + (BLOCKS[eighths % 8] if eighths % 8 else "")


def sparkline(values: list[float]) -> str:
    if not values:
        return ""
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    return "".join(SPARKS[round((v - low) / span * (len(SPARKS) - 1))] for v in values)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def summary_rows(generation: int, metrics: dict[str, Any]) -> list[dict[str, str]]:
    """The summary table: one row per headline metric, then the seconds of each stage."""
    rows = [{"metric": "generation", "value": str(generation)}]
    for name, value in metrics.items():
        if name == "stage_seconds":
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k}: {v}" for k, v in value.items()) or "-"
        rows.append({"metric": name, "value": "-" if value is None else str(value)})
    rows += [{"metric": f"seconds: {stage}", "value": f"{s:.1f}"} for stage, s in metrics["stage_seconds"].items()]
    return rows


def p_hat_histogram(batches: pl.DataFrame, alpha: float, k_min: float) -> str:
    """Markdown histogram of p̂ over this generation's reward units (generated tasks, or seed batches with
    reward_scope=batch), with the α band marked."""
    p_hats = batches["p_hat"].drop_nulls().to_list()
    per_task = batches["task_id"].is_not_null().any()
    unit, units = ("generated task", "tasks") if per_task else ("seed batch", "batches")
    lines = [f"**p̂ per {unit}** (α = {alpha}, band ±{k_min}; ★ = bin inside the band)", ""]
    if batches.is_empty():
        return "\n".join([*lines, "No reward units in this generation (generation 0 records seeds and warm-starts)."])
    counts = [0] * HISTOGRAM_BINS
    for p in p_hats:
        counts[min(int(p * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
    most = max(counts) or 1
    lines += [f"| p̂ | {units} | |", "|---|---:|---|"]
    for i, count in enumerate(counts):
        low, high = i / HISTOGRAM_BINS, (i + 1) / HISTOGRAM_BINS
        star = " ★" if low >= alpha - k_min - 1e-9 and high <= alpha + k_min + 1e-9 else ""
        drawn = bar(count / most)
        lines.append(f"| {low:.1f}–{high:.1f}{star} | {count} | {f'`{drawn}`' if drawn else ''} |")
    missing = batches.height - len(p_hats)
    invalid = f"{missing} output(s) were rejected" if per_task else f"{missing} batch(es) had no valid variation"
    lines += ["", f"{invalid} (no p̂; see `generator_reward`)."]
    return "\n".join(lines)


def curriculum_trend(committed: pl.DataFrame) -> str:
    """Success and α-band share across the committed generations of a run."""
    lines = [
        "**Across generations**",
        "",
        "| gen | valid tasks | mean p̂ | in α band | | fresh success | held-out success | |",
        "|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for row in committed.sort("generation").iter_rows(named=True):
        m = json.loads(row["metrics"])
        p_hat = "-" if m.get("mean_p_hat") is None else f"{m['mean_p_hat']:.2f}"
        lines.append(
            f"| {row['generation']} | {_pct(m.get('valid_rate'))} | {p_hat} | {_pct(m.get('band_share'))} "
            f"| `{bar(m.get('band_share'), 10)}` | {_pct(m.get('fresh_success'))} "
            f"| {_pct(m.get('heldout_success'))} | `{bar(m.get('heldout_success'), 10)}` |"
        )
    return "\n".join(lines)


def loss_svg(curves: dict[str, list[float]], width: int = 480, height: int = 180) -> str:
    """A line chart of the loss curves on shared axes (loss up, optimizer step across), as an SVG data URI the UI
    shows inline."""
    colors = ("#2563eb", "#dc2626", "#059669", "#d97706")
    values = [v for curve in curves.values() for v in curve]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    left, top, right, bottom = 56, 10, width - 10, height - 44
    steps = max(len(curve) for curve in curves.values())
    dx = (right - left) / max(steps - 1, 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="11">']
    parts.append(f'<rect width="{width}" height="{height}" fill="white" stroke="#ccc"/>')
    parts.append(f'<polyline fill="none" stroke="#888" points="{left},{top} {left},{bottom} {right},{bottom}"/>')
    parts += [
        f'<text x="{left - 4}" y="{top + 8}" text-anchor="end">{high:.3g}</text>',
        f'<text x="{left - 4}" y="{bottom}" text-anchor="end">{low:.3g}</text>',
        f'<text x="{left}" y="{bottom + 14}">step 0</text>',
        f'<text x="{right}" y="{bottom + 14}" text-anchor="end">step {steps - 1}</text>',
        f'<text x="4" y="{(top + bottom) / 2}">loss</text>',
    ]
    for i, (name, curve) in enumerate(curves.items()):
        xy = [(left + j * dx, top + (bottom - top) * (1 - (v - low) / span)) for j, v in enumerate(curve)]
        color = colors[i % len(colors)]
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}"/>')
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>' for x, y in xy]
        parts.append(f'<text x="{left + 150 * i}" y="{height - 8}" font-size="12" fill="{color}">{name}</text>')
    parts.append("</svg>")
    return "data:image/svg+xml;base64," + base64.b64encode("".join(parts).encode()).decode()


def loss_curves(training: pl.DataFrame) -> str:
    """Per (role, phase): steps, first and last loss, a sparkline, and the chart as an inline image once a curve has
    `CHART_MIN_POINTS` steps (a chart of two dots says less than the table)."""
    if training.is_empty():
        return "**Loss curves**\n\nNo optimizer step in this generation."
    curves = {
        f"{role} {phase}": group.sort("step")["loss"].to_list()
        for (role, phase), group in training.group_by("role", "phase", maintain_order=True)
    }
    lines = ["**Loss curves**", "", "| update | steps | first | last | curve |", "|---|---:|---:|---:|---|"]
    for name, curve in curves.items():
        lines.append(f"| {name} | {len(curve)} | {curve[0]:.4f} | {curve[-1]:.4f} | `{sparkline(curve)}` |")
    if max(len(curve) for curve in curves.values()) < CHART_MIN_POINTS:
        return "\n".join(lines)
    return "\n".join([*lines, "", f"![loss curves]({loss_svg(curves)})"])


class StageProgress(tqdm):
    """A tqdm bar that also keeps a Prefect progress artifact up to date, at most every `every` seconds.

    Outside a Prefect run (unit tests, notebooks) it is a plain tqdm bar.
    """

    def __init__(self, *args: Any, every: float = 2.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._every, self._sent = every, time.monotonic()
        self._artifact: UUID | None = None
        if self.total and (TaskRunContext.get() or FlowRunContext.get()):
            made = create_progress_artifact(0.0, description=f"{self.desc} ({self.total} {self.unit})")
            self._artifact = cast(UUID, made)  # Prefect's sync_compatible: a synchronous caller gets the id

    def update(self, n: float | None = 1) -> bool | None:
        shown = super().update(n)
        total = self.total or 1  # a card is only made for a bar with a total
        if self._artifact is not None and (self.n >= total or time.monotonic() - self._sent >= self._every):
            update_progress_artifact(self._artifact, progress=round(100 * min(self.n / total, 1.0), 1))
            self._sent = time.monotonic()
        return shown

    def advance(self, n: int) -> None:
        """`update` as a backend's `progress` callback, which returns nothing."""
        self.update(n)

    def close(self) -> None:
        """The live card has done its job once the stage's work is done: remove it so the Artifacts tab keeps only
        what is worth opening."""
        super().close()
        artifact, self._artifact = getattr(self, "_artifact", None), None
        if artifact is not None:
            with get_client(sync_client=True) as client:
                client.delete_artifact(artifact)
