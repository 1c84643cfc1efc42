import random

import pytest

from genenv.domains.base import TaskInstance, difficulty_hint, get_domain
from genenv.domains.tool_call.prompts import DIFFICULTY
from genenv.tasks.warm_start import fitting_success_rate, sibling_pairs

TOOL_CALL = get_domain("tool_call")


def _task(task_id: str, family: str, answer: str = "[f()]") -> TaskInstance:
    functions = [{"name": f"{family}.f", "description": "", "parameters": {"type": "dict", "properties": {}}}]
    return TaskInstance(
        task_id=task_id, spec={"functions": functions, "question": task_id}, answer=answer, family=family
    )


def test_simulator_warm_start_pairs_each_seed_with_a_sibling_of_its_family():
    seeds = [_task("a1", "a"), _task("a2", "a"), _task("a3", "a"), _task("b1", "b"), _task("c1", "c"), _task("c2", "c")]
    pairs = sibling_pairs(TOOL_CALL, seeds, seeds, random.Random(0), 0.5, 0.1)
    assert [seed.task_id for seed, _, _ in pairs] == ["a1", "a2", "a3", "c1", "c2"]
    for seed, sibling, success in pairs:
        assert sibling.family == seed.family and sibling.task_id != seed.task_id
        assert 0.0 <= success <= 1.0
    assert pairs == sibling_pairs(TOOL_CALL, seeds, seeds, random.Random(0), 0.5, 0.1)


def test_abstention_seeds_pair_with_abstentions_and_calls_with_calls():
    """The simulator learns to write `[]` tasks from `[]` seeds: each abstention seed's sibling is another training
    request put to its functions, answered `[]`; a seed with calls never pairs with an abstention."""
    seeds = TOOL_CALL.load_seeds()
    pairs = sibling_pairs(TOOL_CALL, seeds, seeds, random.Random(0), 0.5, 0.1)
    abstentions = [(seed, sibling) for seed, sibling, _ in pairs if TOOL_CALL.is_abstention(seed)]
    assert len(abstentions) == sum(TOOL_CALL.is_abstention(s) for s in seeds) >= 30
    for seed, sibling in abstentions:
        assert sibling.answer == "[]" and sibling.spec["functions"] == seed.spec["functions"]
        assert sibling.spec["question"] != seed.spec["question"]
        assert any(sibling.spec["question"] == s.spec["question"] and not TOOL_CALL.is_abstention(s) for s in seeds)
    calls = [(seed, sibling) for seed, sibling, _ in pairs if not TOOL_CALL.is_abstention(seed)]
    assert calls and not any(TOOL_CALL.is_abstention(sibling) for _, sibling in calls)


@pytest.mark.parametrize(("difference", "hint"), [(2.0, "harder"), (-1.0, "easier"), (0.0, "Keep a similar")])
def test_the_hint_shown_fits_the_pair(difference: float, hint: str):
    """A sibling harder than its seed is shown with a success rate above the α band (the hint says "harder"), an
    easier one below it, an equal one inside it: the simulator is taught to follow the hint, not to ignore it."""
    rng = random.Random(1)
    for _ in range(200):
        rate = fitting_success_rate(difference, 0.5, 0.1, rng)
        assert hint in difficulty_hint(rate, 0.5, 0.1, DIFFICULTY)


def test_tool_call_difficulty_counts_calls_and_arguments():
    assert TOOL_CALL.difficulty(_task("x", "a", "[]")) == 0
    assert TOOL_CALL.difficulty(_task("x", "a", '[f(a=1, b="x")]')) == 3
    assert TOOL_CALL.difficulty(_task("x", "a", "[f(a=1), g(b=2)]")) == 4


def test_text_games_pair_with_games_of_the_same_size_and_quest():
    pytest.importorskip("textworld")
    from genenv.domains.text_game.authoring import load_seeds

    seeds = load_seeds()
    domain = get_domain("text_game")
    pairs = sibling_pairs(domain, seeds, seeds, random.Random(0), 0.5, 0.1)
    assert len(pairs) == len(seeds)  # every setting has 4 seeds
    for seed, sibling, _ in pairs:
        assert domain.sibling_key(sibling) == domain.sibling_key(seed)
        assert sibling.spec["game"]["seed"] != seed.spec["game"]["seed"]
