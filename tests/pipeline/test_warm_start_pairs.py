import random

from genenv.domains.base import TaskInstance
from genenv.tasks.warm_start import sibling_pairs


def _task(task_id: str, family: str) -> TaskInstance:
    return TaskInstance(task_id=task_id, spec={"question": task_id}, answer="[f()]", family=family)


def test_simulator_warm_start_pairs_each_seed_with_a_sibling_of_its_family():
    seeds = [_task("a1", "a"), _task("a2", "a"), _task("a3", "a"), _task("b1", "b"), _task("c1", "c"), _task("c2", "c")]
    pairs = sibling_pairs(seeds, seeds, random.Random(0), lambda task: task.family)
    assert [seed.task_id for seed, _, _ in pairs] == ["a1", "a2", "a3", "c1", "c2"]
    for seed, sibling, success in pairs:
        assert sibling.family == seed.family and sibling.task_id != seed.task_id
        assert 0.0 <= success <= 1.0
    assert pairs == sibling_pairs(seeds, seeds, random.Random(0), lambda task: task.family)


def test_text_games_pair_with_games_of_the_same_size_and_quest():
    from genenv.domains.base import get_domain
    from genenv.domains.text_game.tasks import load_seeds

    seeds = load_seeds()
    key = get_domain("text_game").sibling_key
    pairs = sibling_pairs(seeds, seeds, random.Random(0), key)
    assert len(pairs) == len(seeds)  # every setting has 4 seeds
    for seed, sibling, _ in pairs:
        assert key(sibling) == key(seed) and sibling.spec["game"]["seed"] != seed.spec["game"]["seed"]
