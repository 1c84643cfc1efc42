"""The comparison report: how each arm's agent and curriculum evolve, as one self-contained HTML page.

Charts follow the paper's figures: benchmark score per generation (with 95% bootstrap intervals as error bars),
agent success on generated tasks with the α zone shaded, share of batches in the band, and response length. Tables
give every score with its interval and the paired differences between models scored on the same items. Plain
inline SVG, so the page opens in any browser with no network access. No absolute path of the machine is shown.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from genenv.arms import BASE as BASE_ROLE
from genenv.arms import TRAIN as TRAIN_ROLE
from genenv.evaluation.benchmark_registry import SAMPLE_RULE, SAMPLE_SEED, format_item_sizes
from genenv.evaluation.bootstrap import CONFIDENCE, METHOD, pooled_paired_difference
from genenv.warehouse.query import query
from genenv.warehouse.store import Warehouse

Series = dict[str, list[tuple[float, float]]]
Ranges = dict[str, list[tuple[float, float, float]]]
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
BUDGET_FIELDS = (
    "generations",
    "seed",
    "seeds_per_generation",
    "variations_per_seed",
    "rollouts_per_task",
    "pool_tasks_per_generation",
    "model",
)
PATH_FIELDS = ("model", "data_dir", "warehouse_uri", "benchmarks_dir")


@dataclass(frozen=True)
class Chart:
    title: str
    y_label: str
    series: Series
    band: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None
    ranges: Ranges = field(default_factory=dict)
    """Per series, (x, low, high): drawn as error bars."""
    references: dict[str, float] = field(default_factory=dict)
    """Horizontal dashed lines (e.g. the base model's score), by name."""


@dataclass(frozen=True)
class ScoredModel:
    """One model scored in the comparison: its label in the report and its evaluation batch."""

    label: str
    eval_batch: str
    run_id: str
    generation: int | None
    arms: tuple[str, ...]
    """The arms whose line this score is on (generation 0 is on every arm's)."""


@dataclass(frozen=True)
class Pair:
    """B - A as the report shows it: per run seed the two models compared, averaged over the seeds item by item."""

    b: str
    a: str
    models: tuple[tuple[str, str], ...]
    """(B's label, A's label) per seed; one pair without seeds."""

    @classmethod
    def of(cls, b: str, a: str) -> Pair:
        return cls(b, a, ((b, a),))


@dataclass(frozen=True)
class Comparison:
    title: str
    command: str
    config: dict[str, Any]
    """The config every arm shares (before the arms' presets)."""
    arms: list[tuple[str, str, str | None, dict[str, str]]]
    """(arm, role, run id or None, the arm's preset overrides); role from genenv.arms."""
    shared_run: str | None
    models: list[ScoredModel]
    pairs: list[Pair]
    """The differences B - A the report shows, paired over the items the models scored."""
    items: dict[str, int]
    limit: int | None


# --- no machine paths ---
_ABSOLUTE = re.compile(r"(?<![\w.:/~…-])(/[^\s'\"<>,;()\[\]{}]+)")


def shown_path(path: str) -> str:
    """An absolute path as the report shows it: relative to the working folder (or its parent), else only its name."""
    if not os.path.isabs(path):
        return path
    target = Path(path)
    cwd = Path.cwd()
    for root, prefix in ((cwd, ""), (cwd.parent, "../")):
        if root != Path(root.anchor) and target.is_relative_to(root):
            return prefix + (str(target.relative_to(root)) if target != root else ".")
    return f"…/{target.name}"


def shown(text: str) -> str:
    """`text` with every absolute path in it replaced by `shown_path`."""
    return _ABSOLUTE.sub(lambda match: shown_path(match.group(1)), text)


# --- charts ---
def line_chart(chart: Chart, width: int = 460, height: int = 260) -> str:
    """An SVG line chart: one line per series, x = generation, optional error bars, shaded band, reference lines."""
    left, right, top, bottom = 48, 16, 28, 36
    points = [p for line in chart.series.values() for p in line]
    xs = [x for x, _ in points] or [0.0, 1.0]
    ys = [y for _, y in points] + [y for r in chart.ranges.values() for _, lo, hi in r for y in (lo, hi)]
    ys = ys + list(chart.references.values()) or [0.0, 1.0]
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
    for name, value in sorted(chart.references.items()):
        out.append(f'<line x1="{left}" y1="{sy(value):.1f}" x2="{width - right}" y2="{sy(value):.1f}" stroke="#777" '
                   f'stroke-dasharray="4 3"><title>{html.escape(name)}: {value:.3f}</title></line>')  # fmt: skip
        out.append(f'<text x="{left + 4}" y="{sy(value) - 3:.1f}" fill="#777">{html.escape(name)}</text>')
    names = sorted(set(chart.series) | set(chart.ranges))
    spread = (width - left - right) * 0.012
    for index, name in enumerate(names):
        colour = COLOURS[index % len(COLOURS)]
        shift = (index - (len(names) - 1) / 2) * spread  # bars of different arms at one x side by side
        line = sorted(chart.series.get(name, []))
        if len(line) > 1:
            coords = " ".join(f"{sx(x) + shift:.1f},{sy(y):.1f}" for x, y in line)
            out.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, lo, hi in chart.ranges.get(name, []):
            cx = sx(x) + shift
            out.append(f'<line x1="{cx:.1f}" y1="{sy(lo):.1f}" x2="{cx:.1f}" y2="{sy(hi):.1f}" stroke="{colour}">'
                       f"<title>{html.escape(name)} g{x:g}: [{lo:.3f}, {hi:.3f}]</title></line>")  # fmt: skip
            for y in (lo, hi):
                out.append(f'<line x1="{cx - 3:.1f}" y1="{sy(y):.1f}" x2="{cx + 3:.1f}" y2="{sy(y):.1f}" '
                           f'stroke="{colour}"/>')  # fmt: skip
        out.extend(f'<circle cx="{sx(x) + shift:.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}"/>' for x, y in line)
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


def _number(value: float | None) -> float | None:
    """A metric as a float (counts such as d_env are stored as ints)."""
    return None if value is None else float(value)


def _metric(name: str) -> Callable[[str], float | None]:
    """A `metrics` JSON's number `name` (None where absent)."""
    return lambda metrics: _number(json.loads(metrics).get(name))


def curriculum_charts(warehouse: Warehouse, runs: dict[str, str], band: tuple[float, float]) -> list[Chart]:
    """The training-side charts from the committed `generations` rows, for {arm: run_id}."""
    arms = pl.DataFrame(
        {"arm": list(runs), "run_id": list(runs.values())}, schema={"arm": pl.String, "run_id": pl.String}
    )
    metrics = query(warehouse, "SELECT run_id, generation, metrics FROM generations")
    metrics = metrics.join(arms, on="run_id").with_columns(
        **{
            name: pl.col("metrics").map_elements(_metric(name), return_dtype=pl.Float64)
            for name in (
                "fresh_success",
                "band_share",
                "valid_rate",
                "d_env",
                "heldout_success",
                "mean_completion_tokens",
            )
        }
    )
    return [
        Chart("agent success on generated tasks", "success", _series(metrics, "fresh_success"), band, (0.0, 1.0)),
        Chart("share of generated tasks in the α band", "share", _series(metrics, "band_share"), y_range=(0.0, 1.0)),
        Chart("share of simulator outputs that are valid", "share", _series(metrics, "valid_rate"), y_range=(0.0, 1.0)),
        Chart("D_env size (tasks the simulator's band kept)", "tasks", _series(metrics, "d_env")),
        Chart("held-out seed success", "success", _series(metrics, "heldout_success"), y_range=(0.0, 1.0)),
        Chart("agent response length", "tokens", _series(metrics, "mean_completion_tokens")),
    ]


# --- scores ---
def model_scores(warehouse: Warehouse, models: Sequence[ScoredModel]) -> pl.DataFrame:
    """The `evaluations` rows of every model, with its label: label, benchmark, category, metric, value, n, ci."""
    rows = warehouse.read("evaluations")
    frames = [
        rows.filter(pl.col("eval_id").str.starts_with(f"{model.eval_batch}/")).with_columns(label=pl.lit(model.label))
        for model in models
    ]
    columns = ["label", "benchmark", "category", "metric", "value", "n", "ci_low", "ci_high"]
    return (
        pl.concat([f.select(columns) for f in frames])
        if frames
        else rows.with_columns(label=pl.lit("")).select(columns)
    )


def item_scores(
    warehouse: Warehouse, models: Sequence[ScoredModel]
) -> dict[tuple[str, str, str, str], dict[str, float]]:
    """{(label, benchmark, category, metric): {item_id: score}} from `evaluation_items`."""
    rows = warehouse.read("evaluation_items")
    out: dict[tuple[str, str, str, str], dict[str, float]] = {}
    for model in models:
        mine = rows.filter(pl.col("eval_id").str.starts_with(f"{model.eval_batch}/"))
        for eval_id, item_id, score in mine.select("eval_id", "item_id", "score").iter_rows():
            _, benchmark, category, metric = eval_id.rsplit("/", 3)
            out.setdefault((model.label, benchmark, category, metric), {})[item_id] = score
    return out


def paired_rows(
    items: dict[tuple[str, str, str, str], dict[str, float]], pairs: Sequence[Pair]
) -> list[dict[str, Any]]:
    """Per pair and (benchmark, category, metric) all its models have: B - A with its paired bootstrap interval,
    pooled over the pair's seeds (seeds and items resampled)."""
    rows = []
    categories = sorted({key[1:] for key in items})
    for pair in pairs:
        for benchmark, category, metric in categories:
            found = [
                (items.get((a, benchmark, category, metric)), items.get((b, benchmark, category, metric)))
                for b, a in pair.models
            ]
            per_seed = [(a, b) for a, b in found if a is not None and b is not None]
            if len(per_seed) < len(found):
                continue
            try:
                diff = pooled_paired_difference(per_seed)
            except ValueError:  # no item every model scored
                continue
            row = {"b": pair.b, "a": pair.a, "seeds": len(pair.models), "benchmark": benchmark, "category": category}
            rows.append({**row, "metric": metric, "value": diff.value, "low": diff.low, "high": diff.high, "n": diff.n})
    return rows


def benchmark_charts(scores: pl.DataFrame, comparison: Comparison) -> list[Chart]:
    """One chart per (benchmark, category, metric): each arm's scores by generation with their intervals."""
    roles = {arm: role for arm, role, _, _ in comparison.arms}
    lines = [arm for arm, role in roles.items() if role == TRAIN_ROLE] or [
        arm for arm, role in roles.items() if role != BASE_ROLE
    ]
    by_label = {model.label: model for model in comparison.models}
    charts = []
    for (benchmark, category, metric), frame in sorted(
        scores.group_by("benchmark", "category", "metric"), key=lambda group: group[0]
    ):
        series: Series = {}
        ranges: Ranges = {}
        references: dict[str, float] = {}
        for label, value, low, high in frame.select("label", "value", "ci_low", "ci_high").iter_rows():
            model = by_label[label]
            if model.generation is None:
                references[label] = value
                continue
            for arm in model.arms:
                if arm in lines:
                    series.setdefault(arm, []).append((float(model.generation), value))
                    if low is not None and high is not None:
                        ranges.setdefault(arm, []).append((float(model.generation), low, high))
        title = f"{benchmark} {category}: {metric}"
        charts.append(Chart(title, metric, series, y_range=(0.0, 1.0), ranges=ranges, references=references))
    return charts


def _interval(value: float, low: float | None, high: float | None, signed: bool = False) -> str:
    number = "{:+.3f}" if signed else "{:.3f}"
    if low is None or high is None:
        return number.format(value)
    return f"{number.format(value)} [{number.format(low)}, {number.format(high)}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def scores_table(scores: pl.DataFrame, models: Sequence[ScoredModel]) -> str:
    """Rows (benchmark, category, metric), one column per model: value [low, high]."""
    labels = [model.label for model in models]
    rows = []
    for (benchmark, category, metric), frame in sorted(
        scores.group_by("benchmark", "category", "metric"), key=lambda group: group[0]
    ):
        cells = {
            label: (v, lo, hi, n)
            for label, v, lo, hi, n in frame.select("label", "value", "ci_low", "ci_high", "n").iter_rows()
        }
        ns = sorted({cell[3] for cell in cells.values()})
        row = [html.escape(x) for x in (benchmark, category, metric)] + ["/".join(map(str, ns))]
        row += [_interval(*cells[label][:3]) if label in cells else "–" for label in labels]
        rows.append(row)
    return _table(["benchmark", "category", "metric", "n", *labels], rows)


def differences_table(rows: Sequence[dict[str, Any]]) -> str:
    body = [
        [
            html.escape(f"{row['b']} − {row['a']}" + (f", {row['seeds']} seeds pooled" if row["seeds"] > 1 else "")),
            *(html.escape(row[k]) for k in ("benchmark", "category", "metric")),
            str(row["n"]),
            _interval(row["value"], row["low"], row["high"], signed=True),
        ]
        for row in rows
    ]
    return _table(
        ["difference (B − A)", "benchmark", "category", "metric", "paired items", "value [95% interval]"], body
    )


def arms_table(warehouse: Warehouse, comparison: Comparison) -> str:
    """One row per arm: what it is (shared run, fork, base, generation 0), its run and its preset overrides."""
    rows = []
    parents = {run: warehouse.run(run) for run in {r for _, _, r, _ in comparison.arms if r}}
    for arm, role, run, preset in comparison.arms:
        if role == TRAIN_ROLE and run == comparison.shared_run:
            what = "trains generations 1..T; its generation 0 is the shared one"
        elif role == TRAIN_ROLE and run is not None:
            parent = parents[run]
            what = f"fork of {parent['parent_run_id']} at generation {parent['parent_generation']}; trains 1..T"
        elif role == BASE_ROLE:
            what = "the base model without adapters"
        else:
            what = "generation 0 of the shared run (g0)"
        overrides = ", ".join(f"{k}={v}" for k, v in preset.items()) or "none"
        rows.append(
            [html.escape(arm), html.escape(what), f"<code>{html.escape(run or '–')}</code>", html.escape(overrides)]
        )
    return _table(["arm", "what it is", "run", "preset overrides"], rows)


def comparison_report(warehouse: Warehouse, comparison: Comparison) -> str:
    """The whole page for a finished comparison (flows/compare.py)."""
    scores = model_scores(warehouse, comparison.models)
    differences = paired_rows(item_scores(warehouse, comparison.models), comparison.pairs)
    config = comparison.config
    runs = {arm: run for arm, role, run, _ in comparison.arms if role == TRAIN_ROLE and run}
    band = (config["alpha"] - config["k_min"], config["alpha"] + config["k_min"])
    charts = [*benchmark_charts(scores, comparison), *curriculum_charts(warehouse, runs, band)]

    sizes = format_item_sizes(comparison.items) if comparison.items else "none"
    other = f"{comparison.limit} per category" if comparison.limit is not None else "all items"
    scored_n = (
        scores.group_by("benchmark", "category").agg(pl.col("n").max()).sort("benchmark", "category").iter_rows()
        if not scores.is_empty()
        else []
    )
    notes = [
        f"Command: <code>{html.escape(shown(comparison.command))}</code>",
        "Every arm shares this config, hence its seeds and agent sample budget: "
        + html.escape(", ".join(f"{name}={shown(str(config[name]))}" for name in BUDGET_FIELDS if name in config)),
        f"Benchmark items: --items {html.escape(sizes)}; other categories: {other}. Rule: "
        f"{html.escape(SAMPLE_RULE)}, seed {SAMPLE_SEED}; the same items for every model. Scored: "
        + html.escape(", ".join(f"{b}/{c} {n}" for b, c, n in scored_n) or "none"),
        f"Intervals: {CONFIDENCE:.0%} {html.escape(METHOD)}; differences are paired: the per-item differences"
        " B − A over the items both models scored, resampled the same way; pooled over seeds, each resample draws the"
        " seeds with replacement, then the items (a hierarchical bootstrap), so an interval covers other seeds too.",
        "g0 is generation 0 (seed set and warm start), run once and shared by every arm; "
        "a label 'arm gT' is that arm's agent after generation T, 'arm sN' that arm run with seed N from the same "
        "generation 0.",
    ]
    config_rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{html.escape(shown(str(value)))}</td></tr>"
        for name, value in config.items()
    )
    figures = "".join(f"<figure>{line_chart(chart)}</figure>" for chart in charts)
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(comparison.title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "figure{display:inline-block;margin:0.5em}td,th{padding:0 1em;text-align:left}</style></head><body>"
        f"<h1>{html.escape(comparison.title)}</h1><ul>{''.join(f'<li>{note}</li>' for note in notes)}</ul>"
        f"<h2>Arms</h2>{arms_table(warehouse, comparison)}"
        f"<h2>Scores with {CONFIDENCE:.0%} intervals</h2>{scores_table(scores, comparison.models)}"
        f"<h2>Paired differences</h2>{differences_table(differences)}"
        f"<h2>Charts</h2>{figures}"
        f"<details><summary>The shared config</summary><table>{config_rows}</table></details>"
        "</body></html>"
    )
