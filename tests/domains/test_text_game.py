"""The text_game domain's games on real TextWorld: specs checked by name, games compiled, walkthroughs replayed,
played turn by turn, and the shipped seed set's measured difficulty reproduced."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from genenv.domains.text_game.spec import GameSpec, SpecError

SHIPPED = [
    json.loads(line)
    for line in resources.files("genenv.domains.text_game").joinpath("data/seeds.jsonl").read_text().splitlines()
]


@pytest.mark.parametrize(
    ("text", "reason", "named"),
    [
        ("rooms: 3", "unparseable_spec", "not JSON"),
        ("[3, 6, 4, 7]", "unparseable_spec", "JSON object"),
        ('{"rooms": 3, "objects": 6, "quest_length": 4}', "missing_field", "seed"),
        ('{"rooms": 3, "objects": 6, "quest_length": 4, "seed": 7, "doors": 2}', "unknown_field", "doors"),
        ('{"rooms": "3", "objects": 6, "quest_length": 4, "seed": 7}', "wrong_type", "rooms"),
        ('{"rooms": 3, "objects": true, "quest_length": 4, "seed": 7}', "wrong_type", "objects"),
        ('{"rooms": 3, "objects": 6, "quest_length": 40, "seed": 7}', "out_of_range", "quest_length"),
    ],
)
def test_a_bad_spec_is_refused_with_its_reason_and_field(text, reason, named):
    with pytest.raises(SpecError, match=named) as refused:
        GameSpec.from_json(text)
    assert refused.value.reason == reason


def test_the_shipped_seeds_span_easy_to_hard():
    assert len(SHIPPED) >= 20 and len({row["seed_id"] for row in SHIPPED}) == len(SHIPPED)
    for row in SHIPPED:
        spec = GameSpec.from_dict(row["spec"])
        assert len(row["walkthrough"]) == spec.quest_length
    by_length = {}
    for row in SHIPPED:
        by_length.setdefault(row["spec"]["quest_length"], []).append(row["random_agent_success"])
    means = [sum(rates) / len(rates) for _, rates in sorted(by_length.items())]
    assert means[0] >= 0.8 and means[-1] <= 0.1


textworld = pytest.importorskip("textworld", reason="the text-game extra is not installed")

from genenv.domains.text_game.engine import (  # noqa: E402  (after the skip: these need TextWorld)
    GameRejected,
    _check_walkthrough,
    compile_game,
    play,
    random_agent_success,
)


@pytest.fixture(scope="module")
def game(tmp_path_factory):
    return compile_game(GameSpec(rooms=3, objects=6, quest_length=4, seed=7), tmp_path_factory.mktemp("games"))


def test_a_spec_compiles_to_the_same_game_in_another_process(game, tmp_path):
    script = (
        "import sys; from pathlib import Path; from genenv.domains.text_game.spec import GameSpec; "
        "from genenv.domains.text_game.engine import compile_game; "
        "g = compile_game(GameSpec(rooms=3, objects=6, quest_length=4, seed=7), Path(sys.argv[1])); "
        "print(g.path)"
    )
    other = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True)
    assert Path(other.stdout.strip()).read_bytes() == game.path.read_bytes()
    assert len(game.walkthrough) == 4 and game.objective.strip()


def test_an_episode_is_played_turn_by_turn_and_the_walkthrough_wins(game):
    commands = iter(game.walkthrough)
    won = play(game, lambda observation, turns: next(commands), max_steps=10)
    assert won.won and [turn.command for turn in won.turns] == list(game.walkthrough)
    assert game.objective.split()[0] in won.start.text and won.start.admissible
    assert "-= " not in won.turns[0].observation.text.splitlines()[-1]  # the status bar is stripped

    idle = play(game, lambda observation, turns: "look", max_steps=3)
    assert not idle.won and len(idle.turns) == 3 and all(not turn.observation.done for turn in idle.turns)


def test_a_walkthrough_that_is_too_short_or_does_not_win_is_rejected(game):
    with pytest.raises(GameRejected) as short:
        _check_walkthrough(dataclasses.replace(game, walkthrough=game.walkthrough[:-1]))
    assert short.value.reason == "walkthrough_length"
    with pytest.raises(GameRejected) as losing:
        _check_walkthrough(dataclasses.replace(game, walkthrough=("look",) * len(game.walkthrough)))
    assert losing.value.reason == "walkthrough_fails"


def test_textworld_placing_a_shorter_quest_than_asked_is_caught(tmp_path):
    with pytest.raises(GameRejected, match="the walkthrough has 1 steps, the quest asks for 2") as rejected:
        compile_game(GameSpec(rooms=2, objects=4, quest_length=2, seed=4), tmp_path)
    assert rejected.value.reason == "walkthrough_length"
    assert not list(tmp_path.glob("*.genenv.json"))  # nothing cached as a valid game


@pytest.mark.parametrize("row", [SHIPPED[0], SHIPPED[len(SHIPPED) // 2], SHIPPED[-1]], ids=lambda row: row["seed_id"])
def test_a_shipped_seed_reproduces_its_measured_difficulty(row, tmp_path):
    shipped = compile_game(GameSpec.from_dict(row["spec"]), tmp_path)
    assert list(shipped.walkthrough) == row["walkthrough"] and shipped.objective == row["objective"]
    measured = random_agent_success(shipped, row["random_agent_episodes"], row["max_steps"])
    assert measured == row["random_agent_success"]
