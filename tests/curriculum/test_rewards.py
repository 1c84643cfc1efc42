import math
import random

import pytest

from genenv.curriculum.batches import BatchOutcome, TaskOutcome, score_batches, score_tasks, simulator_advantages
from genenv.curriculum.generator_rewards import (
    CurriculumParams,
    absolute_zero_reward,
    alpha_curriculum_reward,
    alpha_linear_reward,
    in_band,
    r_zero_reward,
    rwr_weights,
    success_rate,
)
from genenv.curriculum.pools import draw, generation_rng, grow_pool, is_heldout, whole_groups

PAPER = CurriculumParams(alpha=0.5, beta=2.0, k_min=0.1, rwr_lambda=1.0)


def test_success_rate_is_share_of_solved():
    assert success_rate([1.0, 0.5, 0.0, 0.5]) == 0.5
    assert success_rate([1.0, 1.0, 0.0]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="no valid variation"):
        success_rate([])


@pytest.mark.parametrize(
    ("p_hat", "expected"),
    [(0.5, 1.0), (0.25, math.exp(-0.125)), (0.0, math.exp(-0.5)), (1.0, math.exp(-0.5)), (0.75, math.exp(-0.125))],
)
def test_alpha_curriculum_reward_eq3(p_hat, expected):
    assert alpha_curriculum_reward(p_hat, PAPER) == pytest.approx(expected, abs=1e-12)


def test_alpha_curriculum_reward_follows_alpha_and_beta():
    params = CurriculumParams(alpha=0.3, beta=10.0)
    assert alpha_curriculum_reward(0.3, params) == 1.0
    assert alpha_curriculum_reward(0.5, params) == pytest.approx(math.exp(-10 * 0.04))


def test_alternative_generator_rewards():
    assert r_zero_reward(0.25, PAPER) == 0.25
    assert r_zero_reward(0.5, PAPER) == 0.5
    assert r_zero_reward(0.9, PAPER) == pytest.approx(0.1)
    assert absolute_zero_reward(0.0, PAPER) == 0.0
    assert absolute_zero_reward(1.0, PAPER) == 0.0
    assert absolute_zero_reward(0.25, PAPER) == 0.75


@pytest.mark.parametrize(
    ("p_hat", "kept"),
    [(0.5, True), (0.4, True), (0.6, True), (0.39, False), (0.625, False), (0.0, False), (1.0, False)],
)
def test_band_filter_keeps_only_batches_near_alpha(p_hat, kept):
    assert in_band(p_hat, PAPER) is kept


def test_band_with_n4_binary_outcomes_keeps_only_half():
    # The GenEnv paper: with n = 4 binary outcomes only p̂ = 0.5 survives the ±0.1 band.
    assert [p for p in (0, 0.25, 0.5, 0.75, 1.0) if in_band(p, PAPER)] == [0.5]


def test_rwr_weights_are_exp_lambda_r_normalised_to_mean_one():
    weights = rwr_weights([1.0, 0.0], PAPER)
    assert weights == pytest.approx([2 * math.e / (math.e + 1), 2 / (math.e + 1)])
    assert sum(weights) / len(weights) == pytest.approx(1.0)
    assert rwr_weights([0.3, 0.3, 0.3], PAPER) == pytest.approx([1.0, 1.0, 1.0])
    assert rwr_weights([], PAPER) == []
    flat = rwr_weights([1.0, 0.0], CurriculumParams(rwr_lambda=0.0))
    assert flat == [1.0, 1.0]


def test_score_batches_end_to_end_values():
    outcomes = [
        BatchOutcome("b0", "s0", 4, [1.0, 0.0, 0.5, 0.5]),  # p̂ 0.5
        BatchOutcome("b1", "s1", 4, [0.25, 0.5, 0.5, 0.5]),  # p̂ 0.4375
        BatchOutcome("b2", "s2", 4, [1.0, 1.0, 1.0]),  # p̂ 1.0, one variation invalid
        BatchOutcome("b3", "s3", 4, []),  # nothing valid
    ]
    scores = score_batches(outcomes, "alpha_curriculum", PAPER)
    assert [s.p_hat for s in scores] == [0.5, 0.4375, 1.0, None]
    assert [s.n_valid for s in scores] == [4, 4, 3, 0]
    r1 = math.exp(-2 * 0.0625**2)
    assert [s.generator_reward for s in scores] == pytest.approx([1.0, r1, math.exp(-0.5), 0.0])
    assert [s.in_band for s in scores] == [True, True, False, False]
    w0, w1 = math.e, math.exp(r1)
    mean = (w0 + w1) / 2
    assert [s.rwr_weight for s in scores] == pytest.approx([w0 / mean, w1 / mean, 0.0, 0.0])


def test_score_batches_with_other_reward():
    scores = score_batches([BatchOutcome("b", "s", 2, [0.5, 0.0])], "absolute_zero", PAPER)
    assert scores[0].p_hat == 0.25 and scores[0].generator_reward == 0.75 and not scores[0].in_band


def test_score_tasks_judges_each_task_by_its_own_rollouts():
    """One seed's batch whose p̂ is 0.5 (in the band as a batch) holds two tasks the agent always or never solves:
    per task only the two at 0.5 are kept, and the rejected output earns the invalid reward."""
    outcomes = [
        TaskOutcome("b0/v0", "b0", "s0", 1.0),
        TaskOutcome("b0/v1", "b0", "s0", 0.0),
        TaskOutcome("b0/v2", "b0", "s0", 0.5),
        TaskOutcome("b0/v3", "b0", "s0", 0.5),
        TaskOutcome("b0/v4", "b0", "s0", None),
    ]
    scores = score_tasks(outcomes, "alpha_curriculum", PAPER, invalid_reward=-1.0)
    assert [s.task_id for s in scores] == [o.task_id for o in outcomes]
    assert [s.p_hat for s in scores] == [1.0, 0.0, 0.5, 0.5, None]
    assert [s.n_valid for s in scores] == [1, 1, 1, 1, 0]
    far = math.exp(-0.5)
    assert [s.generator_reward for s in scores] == pytest.approx([far, far, 1.0, 1.0, -1.0])
    assert [s.in_band for s in scores] == [False, False, True, True, False]
    assert [s.rwr_weight for s in scores] == [0.0, 0.0, 1.0, 1.0, 0.0]
    as_batch = score_batches([BatchOutcome("b0", "s0", 5, [1.0, 0.0, 0.5, 0.5])], "alpha_curriculum", PAPER)
    assert as_batch[0].p_hat == 0.5 and as_batch[0].in_band and as_batch[0].task_id is None


def test_pool_grows_without_duplicates_or_loss():
    pool = ["a", "b"]
    grown = grow_pool(pool, ["c", "a", "d", "c"])
    assert grown == ["a", "b", "c", "d"]
    assert pool == ["a", "b"]


def test_heldout_split_is_stable_and_near_fraction():
    ids = [f"tc-{i:04d}" for i in range(2000)]
    held = [i for i in ids if is_heldout(i, 0.2)]
    assert held == [i for i in ids if is_heldout(i, 0.2)]
    assert 0.17 < len(held) / len(ids) < 0.23
    assert not any(is_heldout(i, 0.0) for i in ids)


def test_draws_are_seeded_and_bounded():
    items = list(range(10))
    assert draw(items, 4, generation_rng(0, 1, "seeds")) == draw(items, 4, generation_rng(0, 1, "seeds"))
    assert draw(items, 4, generation_rng(0, 1, "seeds")) != draw(items, 4, generation_rng(0, 2, "seeds"))
    assert sorted(draw(items, 50, generation_rng(0, 1, "x"))) == items


def test_alpha_linear_separates_in_band_from_extreme_tasks_by_a_whole_unit():
    assert alpha_linear_reward(0.5, PAPER) == 1.0
    assert alpha_linear_reward(0.0, PAPER) == alpha_linear_reward(1.0, PAPER) == 0.0
    assert alpha_linear_reward(0.4, PAPER) == pytest.approx(0.8)
    skewed = CurriculumParams(alpha=0.3)
    assert alpha_linear_reward(1.0, skewed) == 0.0 and alpha_linear_reward(0.0, skewed) == pytest.approx(1 - 0.3 / 0.7)


def test_simulator_advantages_are_normalised_among_valid_outputs_and_invalid_ones_get_their_penalty():
    groups = ["a", "a", "a", "a", "b", "b", "c"]
    rewards = [1.0, 0.5, None, None, 0.8, 0.8, None]
    advantages = simulator_advantages(groups, rewards, invalid_advantage=-1.0)
    spread = math.sqrt(((1.0 - 0.75) ** 2 + (0.5 - 0.75) ** 2) / 1)
    assert advantages[:2] == pytest.approx([0.25 / (spread + 1e-4), -0.25 / (spread + 1e-4)])
    assert advantages[2:4] == [-1.0, -1.0]
    assert advantages[4:6] == [0.0, 0.0]  # equal valid rewards: no difficulty signal, whatever the invalid ones did
    assert advantages[6] == -1.0
    # The valid task farthest from α is pushed down; normalised over all three outputs with the rejected one at -1
    # (the update before issue 46) it was pushed up: 0.61 is above the mean of 0.61, 1.0 and -1.
    assert simulator_advantages(["a"] * 3, [0.61, 1.0, None], -1.0)[0] < 0 < 0.61 - (0.61 + 1.0 - 1.0) / 3


def test_whole_groups_stay_under_the_cap():
    sizes = {"b0": 4, "b1": 4, "b2": 4, "b3": 3}
    kept = whole_groups(sizes, 9, random.Random(0))
    assert sum(sizes[g] for g in kept) <= 9 and len(kept) == 2
    assert whole_groups(sizes, 100, random.Random(0)) == set(sizes)
    assert len(whole_groups(sizes, 1, random.Random(0))) == 1  # at least one group
