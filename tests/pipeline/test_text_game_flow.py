"""The real flow on the text_game domain with the tiny model: episodes played turn by turn through the whole
pipeline (warm start on walkthroughs, rollouts, replay-verified rewards, GRPO, held-out games)."""

from __future__ import annotations

import importlib.util
import json

import polars as pl
import pytest

from genenv.domains.base import get_domain
from genenv.pipeline.context import GenerationRef, load_tasks
from genenv.runtime.handle import ModelRuntime
from genenv.tasks.commit import summary_line
from genenv.warehouse.query import query
from genenv.warehouse.store import Warehouse
from tests.pipeline.conftest import small_config
from tests.warehouse.test_cookbook import cookbook_queries

TEXT_GAME_QUERIES = cookbook_queries("text_game")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("textworld") is None, reason="the text-game extra is not installed"),
]


def test_a_text_game_run_plays_episodes_and_keeps_every_turn(tiny_model_dir, prefect_server, tmp_path):
    from genenv.flows.evolve import evolve

    config = small_config(tiny_model_dir, tmp_path).replace(
        domain="text_game",
        generations=1,
        episode_max_turns=2,
        show_admissible_commands=False,
        seeds_per_generation=2,
        warm_start_examples=4,
        max_heldout=3,
        probe_tasks=2,
    )
    run_id = evolve(config.to_dict())
    warehouse = Warehouse(config.resolved_warehouse_uri)
    assert warehouse.committed(run_id)["generation"].to_list() == [0, 1]

    # A game is not a request: no text-game task has a question (it was the string "None", or "" for seeds).
    tasks_table = warehouse.read("tasks", run_id=run_id)
    assert tasks_table.height > 0 and tasks_table["question"].null_count() == tasks_table.height

    trajectories = warehouse.read("trajectories", run_id=run_id)
    assert {"pool", "heldout"} <= set(trajectories["purpose"])
    for row in trajectories.iter_rows(named=True):
        mask = row["completion_mask"]
        assert len(mask) == len(row["completion_ids"]) and 0 < sum(mask) < len(mask)
        assert 1 <= len(row["completion"].splitlines()) <= 2  # one command per turn, at most the budget

    # Every turn is kept as the verifier replayed it, and the reward is what replaying the commands gives.
    turns = warehouse.read("turns", run_id=run_id)
    assert set(turns["trajectory_id"]) == set(trajectories["trajectory_id"])
    assert turns.group_by("trajectory_id").agg(pl.len())["len"].max() <= 2
    domain = get_domain("text_game", config)
    tasks = load_tasks(GenerationRef(config.resolved_warehouse_uri, run_id, 1, ModelRuntime()))
    for row in trajectories.head(6).iter_rows(named=True):
        assert domain.verify(row["completion"], tasks[row["task_id"]]).reward == row["reward"]

    # The cookbook's text-game queries answer on a real run.
    endings = query(warehouse, TEXT_GAME_QUERIES["episode_endings"])
    assert endings["episodes"].sum() == trajectories.height and endings["last_turn"].max() <= 2
    by_length = query(warehouse, TEXT_GAME_QUERIES["success_by_quest_length"])
    assert by_length["quest_length"].null_count() == 0 and by_length["episodes"].sum() == trajectories.height
    assert set(query(warehouse, TEXT_GAME_QUERIES["commands_before_a_win"]).columns) == {
        "before_winning",
        "winning",
        "wins",
    }

    training = warehouse.read("training", run_id=run_id)
    assert set(training.filter(pl.col("role") == "agent")["phase"]) == {"warm_start", "grpo"}

    # The curriculum's dynamics are measured in this domain too, and its summary line names them.
    metrics = json.loads(warehouse.committed(run_id).filter(pl.col("generation") == 1)["metrics"].item())
    dynamics = {"valid_rate", "band_share", "mean_distance_to_alpha", "simulator_abstain_share", "trained_kinds"}
    assert dynamics <= metrics.keys() and metrics["simulator_abstain_share"] is None  # a game has no `[]` answer
    assert all(f" {field} " in summary_line(1, metrics) for field in ("valid tasks", "in α band", "|p̂-α|"))
