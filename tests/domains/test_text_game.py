"""The text_game domain's games on real TextWorld: specs checked by name, games compiled, walkthroughs replayed,
played turn by turn, and the shipped seed set's measured difficulty reproduced."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from genenv.domains.base import ValidationContext
from genenv.domains.text_game import authoring
from genenv.domains.text_game.engine import (
    _check_walkthrough,
    compile_game,
    game_input,
    play,
    random_agent_success,
    session,
)
from genenv.domains.text_game.episodes import TextGameEpisode, command_of, replay
from genenv.domains.text_game.spec import GameSpec, SpecRejected

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
    with pytest.raises(SpecRejected, match=named) as refused:
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


needs_textworld = pytest.mark.skipif(
    importlib.util.find_spec("textworld") is None, reason="the text-game extra (TextWorld) is not installed"
)


@pytest.fixture(scope="module")
def game(tmp_path_factory):
    return compile_game(GameSpec(rooms=3, objects=6, quest_length=4, seed=7), tmp_path_factory.mktemp("games"))


@needs_textworld
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


@needs_textworld
def test_an_episode_is_played_turn_by_turn_and_the_walkthrough_wins(game):
    commands = iter(game.walkthrough)
    won = play(game, lambda observation, turns: next(commands), max_steps=10)
    assert won.won and [turn.command for turn in won.turns] == list(game.walkthrough)
    assert game.objective.split()[0] in won.start.text and won.start.admissible
    assert "-= " not in won.turns[0].observation.text.splitlines()[-1]  # the status bar is stripped

    idle = play(game, lambda observation, turns: "look", max_steps=3)
    assert not idle.won and len(idle.turns) == 3 and all(not turn.observation.done for turn in idle.turns)


@needs_textworld
def test_a_walkthrough_that_is_too_short_or_does_not_win_is_rejected(game):
    with pytest.raises(SpecRejected) as short:
        _check_walkthrough(dataclasses.replace(game, walkthrough=game.walkthrough[:-1]))
    assert short.value.reason == "walkthrough_length"
    with pytest.raises(SpecRejected) as losing:
        _check_walkthrough(dataclasses.replace(game, walkthrough=("look",) * len(game.walkthrough)))
    assert losing.value.reason == "walkthrough_fails"


@needs_textworld
def test_textworld_placing_a_shorter_quest_than_asked_is_caught(tmp_path):
    with pytest.raises(SpecRejected, match="the walkthrough has 1 steps, the quest asks for 2") as rejected:
        compile_game(GameSpec(rooms=2, objects=4, quest_length=2, seed=4), tmp_path)
    assert rejected.value.reason == "walkthrough_length"
    assert not list(tmp_path.glob("*.genenv.json"))  # nothing cached as a valid game


@needs_textworld
@pytest.mark.parametrize("row", [SHIPPED[0], SHIPPED[len(SHIPPED) // 2], SHIPPED[-1]], ids=lambda row: row["seed_id"])
def test_a_shipped_seed_reproduces_its_measured_difficulty(row, tmp_path):
    shipped = compile_game(GameSpec.from_dict(row["spec"]), tmp_path)
    assert list(shipped.walkthrough) == row["walkthrough"] and shipped.objective == row["objective"]
    measured = random_agent_success(shipped, row["random_agent_episodes"], row["max_steps"])
    assert measured == row["random_agent_success"]


def test_the_simulator_target_of_a_seed_parses_back_to_its_game():
    seed = authoring.load_seeds()[0]
    parsed = authoring.parse_candidate(authoring.simulator_target(seed), "t1", truncated=False)
    assert parsed.valid and parsed.task.spec["game"] == seed.spec["game"]
    assert authoring.dedup_key(parsed.task) == authoring.dedup_key(seed)


@pytest.mark.parametrize(
    ("raw", "truncated", "reason"),
    [
        ("   ", False, "empty"),
        ("x" * 600, False, "too_long"),
        ('Here it is: {"rooms": 3, "objects": 6, "quest_len', True, "truncated"),
        ("a bigger game with more rooms", False, "missing_spec"),
        ('{"rooms": 3, "objects": 6, "quest_length": 4}', False, "missing_field"),
        ('{"rooms": 30, "objects": 6, "quest_length": 4, "seed": 1}', False, "out_of_range"),
    ],
)
def test_simulator_output_that_is_no_spec_is_kept_with_its_reason(raw, truncated, reason):
    candidate = authoring.parse_candidate(raw, "t1", truncated)
    assert candidate.task is None and candidate.reject_reason == reason and candidate.raw == raw
    assert reason in authoring.REJECT_REASONS


@pytest.mark.parametrize(("rate", "word"), [(None, "unknown"), (0.9, "harder"), (0.1, "easier"), (0.5, "similar")])
def test_the_simulator_prompt_carries_the_agents_success_rate_and_the_band(rate, word):
    messages = authoring.simulator_messages(authoring.load_seeds()[5], rate, alpha=0.5, k_min=0.1)
    assert word in messages[-1]["content"] and '"quest_length": 2' in messages[-1]["content"]


@needs_textworld
def test_a_valid_spec_becomes_a_task_with_its_objective_and_walkthrough(tmp_path):
    raw = 'Sure: {"rooms": 3, "objects": 6, "quest_length": 4, "seed": 11}'
    valid = authoring.validate(authoring.parse_candidate(raw, "t1", truncated=False), ValidationContext(), tmp_path)
    assert valid.valid and len(valid.task.answer.splitlines()) == 4 and valid.task.spec["objective"]

    seen = ValidationContext(seen_keys={authoring.dedup_key(valid.task)})
    assert authoring.validate(authoring.parse_candidate(raw, "t2", False), seen, tmp_path).reject_reason == "duplicate"
    heldout = ValidationContext(heldout_calls={authoring.answer_key(valid.task)})
    assert authoring.validate(authoring.parse_candidate(raw, "t3", False), heldout, tmp_path).reject_reason == (
        "heldout_overlap"
    )
    shorter = '{"rooms": 2, "objects": 4, "quest_length": 2, "seed": 4}'  # TextWorld places a 1-step quest
    rejected = authoring.validate(authoring.parse_candidate(shorter, "t4", False), ValidationContext(), tmp_path)
    assert rejected.reject_reason == "walkthrough_length" and rejected.raw == shorter


@pytest.mark.parametrize(
    ("reply", "command"),
    [("open locker", "open locker"), ("\n  `Take worm from locker.`\nthen more", "take worm from locker"), ("", "")],
)
def test_the_command_is_the_first_line_of_the_reply(reply, command):
    assert command_of(reply) == command


@needs_textworld
def test_an_episode_is_the_conversation_the_agent_continues(game):
    episode = TextGameEpisode(game, max_turns=10, show_admissible=True)
    try:
        first = episode.messages()
        assert [m["role"] for m in first] == ["system", "user"] and "Commands you can use here" in first[1]["content"]
        for command in game.walkthrough:
            assert not episode.done
            episode.step(f"{command.capitalize()}.\n")
        assert episode.done and episode.won
        roles = [m["role"] for m in episode.messages()]
        assert roles == ["system", *["user", "assistant"] * len(game.walkthrough)]
        assert episode.transcript() == "\n".join(game.walkthrough)
    finally:
        episode.close()

    hidden = TextGameEpisode(game, max_turns=2, show_admissible=False)
    try:
        assert "Commands you can use here" not in hidden.messages()[1]["content"]
        hidden.step("look")
        hidden.step("look")
        assert hidden.done and not hidden.won
    finally:
        hidden.close()


@needs_textworld
def test_replaying_the_commands_is_the_verifier(game):
    assert replay("\n".join(game.walkthrough), game, max_turns=10).reward == 1.0
    assert replay("\n".join(game.walkthrough), game, max_turns=3).reward == 0.0  # over the turn budget
    assert replay("look\ninventory", game, max_turns=10).reward == 0.0
    assert replay("", game, max_turns=10).parse_error == "no_command"


def test_what_reaches_the_interpreter_is_printable_ascii_on_one_line():
    assert game_input("take\x00 key\n from  chest") == "take key from chest"
    assert game_input("ouvrir la porte  é日本") == "ouvrir la porte"
    assert len(game_input("x" * 500)) == 120


@needs_textworld
def test_bytes_that_crash_the_interpreter_never_reach_it(game):
    with session(game) as playing:
        assert playing.step("a\x00b").text  # a NUL passed through kills the process (SIGSEGV)
        assert playing.turns[-1].command == "a b"
