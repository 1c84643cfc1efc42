"""The comparison report: how each arm's agent and curriculum evolve, as one self-contained HTML page.

Charts follow the paper's figures: benchmark score per generation, agent success on generated tasks
with the α zone shaded, share of batches in the band, and response length. Plain inline SVG, so the
page opens in any browser with no network access.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from warehouse.query import query
from warehouse.store import Warehouse

Series = dict[str, list[tuple[float, float]]]
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


@dataclass(frozen=True)
class Chart:
    title: str
    y_label: str
    series: Series
    band: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None


def line_chart(chart: Chart, width: int = 460, height: int = 260) -> str:
    """An SVG line chart: one line per series, x = generation, optional shaded horizontal band."""
    left, right, top, bottom = 48, 16, 28, 36
    points = [p for line in chart.series.values() for p in line]
    xs = [x for x, _ in points] or [0.0, 1.0]
    ys = [y for _, y in points] or [0.0, 1.0]
    x0, x1 = min(xs), max(max(xs), min(xs) + 1)
    y0, y1 = chart.y_range or (min(0.0, min(ys)), max(ys) * 1.1 or 1.0)

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (width - left - right)

    def sy(y: float) -> float:
        return height - bottom - (y - y0) / ((y1 - y0) or 1.0) * (height - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="11">']
    out.append(
        f'<text x="{width / 2}" y="16" text-anchor="middle" font-weight="bold">{html.escape(chart.title)}</text>'
    )
    if chart.band:
        lo, hi = (max(min(v, y1), y0) for v in chart.band)
        out.append(f'<rect x="{left}" y="{sy(hi):.1f}" width="{width - left - right}" height="{sy(lo) - sy(hi):.1f}" '
                   'fill="#2ca02c" opacity="0.15"><title>α zone</title></rect>')  # fmt: skip
    out.append(f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="#444"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#444"/>')
    for tick in range(int(x0), int(x1) + 1):
        out.append(f'<text x="{sx(tick):.1f}" y="{height - bottom + 14}" text-anchor="middle">{tick}</text>')
    for i in range(5):
        value = y0 + (y1 - y0) * i / 4
        out.append(f'<text x="{left - 4}" y="{sy(value) + 4:.1f}" text-anchor="end">{value:.2g}</text>')
    out.append(f'<text x="{width / 2}" y="{height - 4}" text-anchor="middle">generation</text>')
    out.append(f'<text x="12" y="{height / 2}" transform="rotate(-90 12 {height / 2})" text-anchor="middle">'
               f"{html.escape(chart.y_label)}</text>")  # fmt: skip
    for index, (name, line) in enumerate(sorted(chart.series.items())):
        colour = COLOURS[index % len(COLOURS)]
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in sorted(line))
        out.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.extend(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}"/>' for x, y in line)
        out.append(f'<text x="{width - right - 4}" y="{top + 12 * (index + 1)}" text-anchor="end" fill="{colour}">'
                   f"{html.escape(name)}</text>")  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def _series(frame: pl.DataFrame, value: str) -> Series:
    """Rows (arm, generation, value) -> one line per arm."""
    series: Series = {}
    for arm, generation, y in frame.select("arm", "generation", value).drop_nulls().iter_rows():
        series.setdefault(arm, []).append((float(generation), float(y)))
    return series


def comparison_charts(warehouse: Warehouse, runs: dict[str, str]) -> list[Chart]:
    """Every chart of the report, from the committed warehouse, for {arm: run_id}."""
    arms = pl.DataFrame({"arm": list(runs), "run_id": list(runs.values())})
    metrics = query(warehouse, "SELECT run_id, generation, metrics FROM generations")
    metrics = metrics.join(arms, on="run_id").with_columns(
        **{
            name: pl.col("metrics").map_elements(lambda m, n=name: json.loads(m).get(n), return_dtype=pl.Float64)
            for name in ("fresh_success", "band_share", "heldout_success", "mean_completion_tokens")
        }
    )
    config = json.loads(query(warehouse, "SELECT config_json FROM runs")["config_json"][0])
    band = (config["alpha"] - config["k_min"], config["alpha"] + config["k_min"])
    scores = query(
        warehouse,
        "SELECT run_id, generation, benchmark, metric, sum(value * n) / sum(n) AS score FROM evaluations "
        "WHERE generation IS NOT NULL GROUP BY ALL",
    ).join(arms, on="run_id")
    charts = [
        Chart(f"{benchmark}: {metric}", metric, _series(frame, "score"), y_range=(0.0, 1.0))
        for (benchmark, metric), frame in sorted(scores.group_by("benchmark", "metric"), key=lambda g: g[0])
    ]
    return [
        *charts,
        Chart("agent success on generated tasks", "success", _series(metrics, "fresh_success"), band, (0.0, 1.0)),
        Chart("share of batches in the α band", "share", _series(metrics, "band_share"), y_range=(0.0, 1.0)),
        Chart("held-out seed success", "success", _series(metrics, "heldout_success"), y_range=(0.0, 1.0)),
        Chart("agent response length", "tokens", _series(metrics, "mean_completion_tokens")),
    ]


def render_report(title: str, runs: dict[str, str], charts: Sequence[Chart], notes: Sequence[str] = ()) -> str:
    rows = "".join(f"<tr><td>{html.escape(a)}</td><td><code>{html.escape(r)}</code></td></tr>" for a, r in runs.items())
    figures = "".join(f"<figure>{line_chart(chart)}</figure>" for chart in charts)
    items = "".join(f"<li>{html.escape(note)}</li>" for note in notes)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "figure{display:inline-block;margin:0.5em}td{padding:0 1em}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><table><tr><th>arm</th><th>run</th></tr>{rows}</table>"
        f"<ul>{items}</ul>{figures}</body></html>"
    )
