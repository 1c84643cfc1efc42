"""A finished run's last lines say in words what changed: the probe before and after each update, and whether the
held-out intervals can tell the first generation from the last; the dynamics report holds a row per generation."""

from __future__ import annotations

from pathlib import Path

from genenv.cli.commands.run_report import Generation, what_changed, write_report

DEMO = [  # a demo run's metrics: the warm start, then two generations
    Generation(0, {"heldout_success": 0.2188, "heldout_ci": [0.0938, 0.375], "heldout_n": 32, "d_train": 229}),
    Generation(
        1,
        {
            "probe_before": 0.25,
            "probe_after": 0.375,
            "heldout_success": 0.25,
            "heldout_ci": [0.125, 0.4062],
            "heldout_n": 32,
            "valid_rate": 0.4583,
            "mean_p_hat": 0.5,
            "mean_difficulty": 4.25,
            "difficulty_parts": {"calls": 1.0, "arguments": 2.0, "optional": 0.25, "distractors": 1.0, "inferred": 0.0},
            "stage_seconds": {"generate": 20.4, "rollout": 30},
            "groups_trained": 21,
            "trained_at_edge": 0.8095,
            "d_env": 5,
            "d_env_added": 5,
            "d_train": 240,
            "d_train_added": 11,
            "d_train_unagreed": 2,
        },
    ),
    Generation(
        2,
        {
            "probe_before": 0.375,
            "probe_after": 0.375,
            "heldout_success": 0.25,
            "heldout_ci": [0.0938, 0.4062],
            "heldout_n": 32,
        },
    ),
]


def test_the_last_lines_say_what_moved_and_why_held_out_cannot_show_it_yet(tmp_path: Path) -> None:
    report = tmp_path / "reports" / "demo-dynamics.md"
    assert what_changed(DEMO, report) == [
        "What changed:",
        "  generation 1: the agent's greedy reward on this generation's probe tasks went from 25% before its update "
        "to 38% after (+12 points)",
        "  generation 2: the agent's greedy reward on this generation's probe tasks went from 38% before its update "
        "to 38% after (no change)",
        "  held-out success (seeds of function families no model trains on) went from 22% [9%, 38%] of 32 at "
        "generation 0 to 25% [9%, 41%] of 32 at generation 2: the intervals overlap, so 2 generations are too few to "
        "tell a change from chance on 32 held-out tasks (about ±16 points); configs/laptop.yaml runs 8 on 270",
        f"Per-generation dynamics (the simulator's tasks, p̂ and the α band, success, losses): {report}",
    ]


def test_intervals_apart_are_called_a_change() -> None:
    apart = [
        Generation(0, {"heldout_success": 0.2, "heldout_ci": [0.1, 0.3], "heldout_n": 270}),
        Generation(8, {"heldout_success": 0.6, "heldout_ci": [0.5, 0.7], "heldout_n": 270}),
    ]
    assert what_changed(apart, None)[-1].endswith("the intervals do not overlap, a change beyond chance")


def test_the_dynamics_report_has_a_row_per_generation(tmp_path: Path) -> None:
    path = write_report(tmp_path / "reports" / "r.md", "r", DEMO)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# Run r: dynamics per generation"
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| generation")]
    assert [row.split(" | ")[0] for row in rows] == ["| 0", "| 1", "| 2"]
    assert rows[1].split(" | ")[1:3] == ["46%", "0.500"] and rows[1].endswith("| 25% [12%, 41%] of 32 | 50 |")
    # how many GRPO groups trained, the share of them at the agent's edge; D_env and what joined it this generation
    header = next(line for line in lines if line.startswith("| generation")).split(" | ")
    cells = {i: dict(zip(header, row.split(" | "), strict=True)) for i, row in enumerate(rows)}
    assert [cells[1][h] for h in ("GRPO groups trained", "trained at the edge", "D_env", "D_env joined")] == [
        "21",
        "81%",
        "5",
        "5",
    ]
    assert [cells[2][h] for h in ("trained at the edge", "D_env joined")] == ["-", "-"]
    # what joined D_train, and the valid tasks kept out of it because no answer of the agent's matched their label
    assert [cells[1][h] for h in ("D_train", "D_train joined", "kept out of D_train")] == ["240", "11", "2"]
    # which part of the tasks' difficulty the curriculum moved, generation by generation
    assert (
        "| 4.250 |" in rows[1]
        and "| calls 1.00 arguments 2.00 optional 0.25 distractors 1.00 inferred 0.00 |" in rows[1]
    )
