"""What a finished run shows, in words for its last lines, and its per-generation dynamics as a markdown report.

A newcomer reads the summary lines' held-out figures (22%, 25%, 25% with intervals of ±15 points on the demo) as
nothing learned; the lines this prints say what did move (the probe's reward before and after each update) and why
the held-out figure cannot show it yet (its intervals overlap: too few generations for that many held-out tasks)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COLUMNS = (
    ("valid tasks", "valid_rate", True),
    ("mean p̂", "mean_p_hat", False),
    ("in α band", "band_share", True),
    ("task difficulty", "mean_difficulty", False),
    ("agent fresh", "fresh_success", True),
    ("agent abstention", "abstention_success", True),
    ("probe before", "probe_before", True),
    ("probe after", "probe_after", True),
    ("GRPO groups trained", "groups_trained", None),
    ("trained at the edge", "trained_at_edge", True),
    ("loss agent", "agent_loss", False),
    ("loss simulator", "simulator_loss", False),
    ("D_train", "d_train", None),
    ("D_train joined", "d_train_added", None),
    ("kept out of D_train", "d_train_unagreed", None),
    ("D_env", "d_env", None),
    ("D_env joined", "d_env_added", None),
)
"""(header, metric, as a percentage: True; a decimal: False; an integer: None) of the report's table."""


@dataclass(frozen=True)
class Generation:
    number: int
    metrics: dict[str, Any]


def committed_generations(warehouse_uri: str, run_id: str) -> list[Generation]:
    """The run's committed generations with their metrics, in order."""
    from genenv.warehouse.store import Warehouse

    rows = Warehouse(warehouse_uri).committed(run_id).sort("generation").iter_rows(named=True)
    return [Generation(row["generation"], json.loads(row["metrics"] or "{}")) for row in rows]


def what_changed(generations: list[Generation], report: Path | None) -> list[str]:
    """The run's last lines: the probe before and after each update, the held-out figure's first and last values
    and whether their intervals tell them apart, and where the dynamics report is."""
    lines = ["What changed:"]
    for g in generations:
        before, after = g.metrics.get("probe_before"), g.metrics.get("probe_after")
        if before is not None and after is not None:
            lines.append(
                f"  generation {g.number}: the agent's greedy reward on this generation's probe tasks went from "
                f"{_pct(before)} before its update to {_pct(after)} after ({_points(after - before)})"
            )
    scored = [g for g in generations if g.metrics.get("heldout_ci")]
    if len(scored) >= 2:
        lines.append("  " + _heldout_sentence(scored[0], scored[-1]))
    if report is not None:
        lines.append(f"Per-generation dynamics (the simulator's tasks, p̂ and the α band, success, losses): {report}")
    return lines


def _heldout_sentence(first: Generation, last: Generation) -> str:
    (low0, high0), (low1, high1) = first.metrics["heldout_ci"], last.metrics["heldout_ci"]
    n, span = last.metrics.get("heldout_n", 0), last.number - first.number
    said = (
        f"held-out success (seeds of function families no model trains on) went from "
        f"{_with_interval(first.metrics)} at generation {first.number} to {_with_interval(last.metrics)} at "
        f"generation {last.number}"
    )
    if low1 > high0 or high1 < low0:
        return f"{said}: the intervals do not overlap, a change beyond chance"
    half = 100 * (high1 - low1) / 2
    return (
        f"{said}: the intervals overlap, so {span} generation{'s' * (span != 1)} are too few to tell a change from "
        f"chance on {n} held-out tasks (about ±{half:.0f} points); configs/laptop.yaml runs 8 on 270"
    )


def write_report(path: Path, run_id: str, generations: list[Generation]) -> Path:
    """A markdown page of the run's per-generation metrics, one row a generation."""
    header = ["generation", *(name for name, _, _ in COLUMNS), "difficulty by part", "held-out [95% interval] of n"]
    header.append("stage seconds")
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for g in generations:
        cells = [str(g.number), *(_cell(g.metrics.get(key), kind) for _, key, kind in COLUMNS)]
        parts = g.metrics.get("difficulty_parts") or {}
        cells.append(" ".join(f"{name} {value:.2f}" for name, value in parts.items()) or "-")
        cells.append(_with_interval(g.metrics) if g.metrics.get("heldout_ci") else "-")
        cells.append(str(round(sum((g.metrics.get("stage_seconds") or {}).values()))))
        rows.append("| " + " | ".join(cells) + " |")
    page = [
        f"# Run {run_id}: dynamics per generation",
        "",
        "Generation 0 is the warm start. p̂ is the agent's success rate on a generated task from its rollouts, the α "
        "band where the simulator is rewarded most; task difficulty is the mean of the domain's difficulty over the "
        "simulator's valid tasks (tool_call: calls, arguments, optional ones, distractors, values to infer), by part "
        "where the domain describes them; the probe is the agent's greedy reward on a fixed sample of the generation's "
        "fresh tasks, before and after its update; trained at the edge is the share of the GRPO groups trained on "
        "whose task the agent solves 20-80% of the time; D_train joined the tasks the agent's pool gained, kept out of "
        "D_train the valid ones no answer of the agent matched (d_train_needs_agreement), and D_env joined the "
        "records the simulator's pool gained in the generation. The same numbers: `genenv show RUN`, and SQL over "
        "the `generations` table (`metrics`).",
        "",
        *rows,
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(page), encoding="utf-8")
    return path


def _cell(value: Any, kind: bool | None) -> str:
    if value is None:
        return "-"
    if kind is None:
        return str(value)
    return _pct(value) if kind else f"{value:.3f}"


def _with_interval(metrics: dict[str, Any]) -> str:
    low, high = metrics["heldout_ci"]
    return f"{_pct(metrics['heldout_success'])} [{_pct(low)}, {_pct(high)}] of {metrics.get('heldout_n', 0)}"


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def _points(delta: float) -> str:
    points = round(100 * delta)
    return f"{points:+d} points" if points else "no change"
