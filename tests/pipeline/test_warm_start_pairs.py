import random
from collections import Counter

import pytest

from genenv.domains.arithmetic.domain import WORDS
from genenv.domains.base import TaskInstance, difficulty_hint, get_domain
from genenv.domains.tool_call.prompts import DIFFICULTY
from genenv.tasks.warm_start import across_levels, fitting_success_rate, sibling_pairs

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


def test_tool_call_difficulty_is_the_sum_of_the_parts_the_simulator_is_asked_to_raise():
    """Calls, argument values, optional ones, offered functions not called, values the request does not state as
    themselves (a boolean; an enum named another way): the warm start pairs seeds by their sum."""
    weather = {
        "name": "weather.forecast",
        "description": "Forecast for a city.",
        "parameters": {
            "type": "dict",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "metric": {"type": "boolean"},
            },
            "required": ["city"],
        },
    }
    news = {"name": "news.headlines", "description": "Headlines.", "parameters": {"type": "dict", "properties": {}}}
    spec = {"functions": [weather, news], "question": "What's the weather in Oslo for 3 days, in Celsius?"}
    task = TaskInstance("t", spec, '[weather.forecast(city="Oslo", days=3, metric=True)]', family="weather")
    parts = TOOL_CALL.difficulty_parts(task)
    assert parts == {"calls": 1, "arguments": 3, "optional": 2, "distractors": 1, "inferred": 1}
    assert TOOL_CALL.difficulty(task) == 8
    abstain = TaskInstance("a", spec, "[]", family="weather")
    assert TOOL_CALL.difficulty_parts(abstain) == {
        "calls": 0,
        "arguments": 0,
        "optional": 0,
        "distractors": 2,
        "inferred": 0,
    }


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


def test_a_siblings_difficulty_level_is_drawn_evenly_not_by_how_many_seeds_each_level_has():
    """across_levels: ten 1-step siblings and one 4-step one, the 4-step one is drawn about half the time (a plain
    choice would draw it one time in eleven), so the simulator sees harder and easier pairs, not mostly similar ones."""
    arithmetic = get_domain("arithmetic")
    seeds = arithmetic.load_seeds()
    one_step = [s for s in seeds if arithmetic.difficulty(s) == 1][:10]
    four_steps = next(s for s in seeds if arithmetic.difficulty(s) == 4)
    rng = random.Random(0)
    drawn = Counter(across_levels(arithmetic, [*one_step, four_steps], rng).task_id for _ in range(1000))
    assert 400 <= drawn[four_steps.task_id] <= 600


def test_the_arithmetic_warm_start_pairs_cover_every_difficulty_with_each_hint():
    """The domain's own seeds have problems of 1 to 4 steps in each one-operator family, so the simulator's warm start
    shows every level as a target, under each of the three hints (harder, easier, similar)."""
    arithmetic = get_domain("arithmetic")
    seeds = arithmetic.load_seeds()
    assert set(Counter(int(arithmetic.difficulty(s)) for s in seeds)) == {1, 2, 3, 4}
    pairs = sibling_pairs(arithmetic, seeds, seeds, random.Random(0), 0.5, 0.1)
    assert {int(arithmetic.difficulty(sibling)) for _, sibling, _ in pairs} == {1, 2, 3, 4}
    hints = Counter(
        next(h for h in ("harder", "easier", "similar") if h in difficulty_hint(rate, 0.5, 0.1, WORDS))
        for _, _, rate in pairs
    )
    assert min(hints[h] for h in ("harder", "easier", "similar")) >= len(pairs) // 10


def test_a_generations_difficulty_is_the_mean_of_each_part_and_of_their_sum():
    """The metrics' mean difficulty equals the mean of `difficulty` over the tasks, and each part's mean is kept where
    the domain describes its parts (tool_call), not where it does not (arithmetic)."""
    from genenv.tasks.commit import _difficulty

    seeds = TOOL_CALL.load_seeds()[:40]
    measured = _difficulty(TOOL_CALL, seeds)
    assert measured["mean_difficulty"] == pytest.approx(sum(map(TOOL_CALL.difficulty, seeds)) / 40, abs=1e-3)
    for name, mean in measured["difficulty_parts"].items():
        assert mean == pytest.approx(sum(TOOL_CALL.difficulty_parts(t)[name] for t in seeds) / 40, abs=1e-3)
    arithmetic = get_domain("arithmetic")
    plain = _difficulty(arithmetic, arithmetic.load_seeds())
    assert plain["difficulty_parts"] is None and plain["mean_difficulty"] > 1
