import random

from genenv.domains.base import TaskInstance
from genenv.tasks.warm_start import sibling_pairs


def _task(task_id: str, family: str) -> TaskInstance:
    return TaskInstance(task_id=task_id, spec={"question": task_id}, answer="[f()]", family=family)


def test_simulator_warm_start_pairs_each_seed_with_a_sibling_of_its_family():
    seeds = [_task("a1", "a"), _task("a2", "a"), _task("a3", "a"), _task("b1", "b"), _task("c1", "c"), _task("c2", "c")]
    pairs = sibling_pairs(seeds, seeds, random.Random(0))
    assert [seed.task_id for seed, _, _ in pairs] == ["a1", "a2", "a3", "c1", "c2"]
    for seed, sibling, success in pairs:
        assert sibling.family == seed.family and sibling.task_id != seed.task_id
        assert 0.0 <= success <= 1.0
    assert pairs == sibling_pairs(seeds, seeds, random.Random(0))
