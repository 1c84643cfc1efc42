"""Every query of docs/cookbook.md runs against a synthetic warehouse; some answers are checked exactly."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from genenv.warehouse.query import query
from genenv.warehouse.store import Warehouse
from tests.support import synthetic_warehouse as synthetic
from tests.warehouse.conftest import BUCKET

COOKBOOK = Path(__file__).parents[2] / "docs" / "cookbook.md"


def cookbook_queries(domain: str | None = None) -> dict[str, str]:
    """The named queries; those marked `-- domain: D` only with `domain=D` (they need that domain's rows)."""
    blocks = re.findall(r"```sql\n(.*?)```", COOKBOOK.read_text(), re.DOTALL)
    named = {}
    for block in blocks:
        name = re.match(r"-- name: (\w+)\n(?:-- domain: (\w+)\n)?", block)
        if name and name.group(2) == domain:
            named[name.group(1)] = block
    return named


QUERIES = cookbook_queries()


@pytest.fixture(scope="module", params=["local", "s3"])
def filled(request, tmp_path_factory) -> Warehouse:
    """Three committed generations, plus generation 3 written but never committed."""
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "local":
            root = str(tmp_path_factory.mktemp("cookbook") / "warehouse")
        else:
            for key, value in request.getfixturevalue("s3_server").env("genenvtest", "s3cr3t-Zq8vY2pLm4").items():
                patch.setenv(key, value)
            root = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}/cookbook"
        warehouse = Warehouse(root)
        synthetic.fill(warehouse, "demo", generations=3)
        for table, data in synthetic.generation_frames("demo", 3).items():
            warehouse.append(table, data)
        yield warehouse


def test_the_cookbook_has_at_least_eight_named_queries():
    assert len(QUERIES) >= 8
    named = len(QUERIES) + len(cookbook_queries("text_game"))
    assert len(re.findall(r"```sql\n-- name:", COOKBOOK.read_text())) == named


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_every_cookbook_query_answers(filled, name):
    result = query(filled, QUERIES[name])
    assert result.height > 0
    if "generation" in result.columns:
        assert set(result["generation"].to_list()) <= {0, 1, 2}, "an uncommitted generation leaked"


def test_reject_reasons_are_counted_exactly(filled):
    assert query(filled, QUERIES["reject_reasons"]).rows() == [
        (1, "checker_rejects_own_answer", 4),
        (1, "parse_error", 4),
        (2, "benchmark_overlap", 3),
        (2, "parse_error", 3),
    ]
    as_of_1 = query(filled, QUERIES["reject_reasons"], run_id="demo", as_of_generation=1)
    assert as_of_1["generation"].unique().to_list() == [1]


def test_pool_growth_is_cumulative(filled):
    train = query(filled, QUERIES["pool_growth"]).filter(pool="train")
    assert train.select("generation", "joined", "size").rows() == [(0, 8, 8), (1, 24, 32), (2, 26, 58)]


def test_success_by_purpose_matches_a_direct_count(filled):
    pivot = query(filled, QUERIES["success_by_purpose"])
    trajectories = filled.read("trajectories", generation=2, purpose="pool")
    assert pivot.filter(generation=2)["pool"][0] == pytest.approx(trajectories["solved"].mean())
    assert pivot.filter(generation=0)["fresh"][0] is None


def test_generation_metrics_point_at_each_snapshot(filled):
    rows = query(filled, QUERIES["generation_metrics"])
    assert rows["metrics_generation"].to_list() == [0, 1, 2]
    versions = rows["trajectories_version"].to_list()
    assert versions == sorted(versions) and versions[-1] < filled.version("trajectories")


def test_unsolved_seeds_are_the_out_of_reach_ones(filled):
    assert query(filled, QUERIES["unsolved_seeds"])["seed_task_id"].to_list() == ["demo/seed/9"]


def test_the_text_game_turn_queries_count_hand_made_episodes_exactly(tmp_path):
    """Three committed episodes: won at turn 2 after 'open chest', won at turn 1, cut off at turn 2."""
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    episodes = {"a": [("open chest", False), ("take key", True)], "b": [("take key", True)], "c": [("look", False)] * 2}
    turns = [
        {"run_id": "r", "generation": 1, "trajectory_id": f"r/{name}", "turn": i, "command": command,
         "observation": "...", "won": won, "lost": False}
        for name, steps in episodes.items()
        for i, (command, won) in enumerate(steps, start=1)
    ]  # fmt: skip
    warehouse.append("turns", turns)
    warehouse.commit_generation(
        "r", 1, agent_checkpoint="a", simulator_checkpoint="s", config_hash="h", seed=0, metrics={}
    )
    warehouse.append("turns", [{**turns[0], "generation": 2, "trajectory_id": "r/uncommitted", "won": True}])
    text_game = cookbook_queries("text_game")
    assert query(warehouse, text_game["episode_endings"]).rows() == [(1, 1, 1, 1, 0), (1, 2, 2, 1, 0)]
    assert query(warehouse, text_game["commands_before_a_win"]).rows() == [
        ("open chest", "take key", 1),
        (None, "take key", 1),
    ]
