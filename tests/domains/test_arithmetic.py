"""The arithmetic domain (docs/domains.md's worked example): the simulator's text parsed into a task whose answer the
domain computes, every malformed output kept with its reason, and exact-match scoring."""

from __future__ import annotations

import pytest

from genenv.config import GenEnvConfig
from genenv.domains.arithmetic.domain import evaluate
from genenv.domains.base import Candidate, ValidationContext, get_domain

DOMAIN = get_domain("arithmetic", GenEnvConfig(domain="arithmetic"))
SEED = DOMAIN.load_seeds()[0]


def parse(raw: str, truncated: bool = False) -> Candidate:
    return DOMAIN.parse_candidate(raw, SEED, "run/g1/t0", truncated)


def test_the_answer_is_computed_from_the_arithmetic_not_taken_from_the_model():
    candidate = parse("Problem: Ann has 7 boxes of 6 pens and loses 5. How many pens are left?\nExpression: 7 * 6 - 5")
    assert candidate.valid
    assert candidate.task.answer == "37" and candidate.task.family == "ops-*-"
    assert DOMAIN.difficulty(candidate.task) == 2.0


@pytest.mark.parametrize(
    ("raw", "truncated", "reason"),
    [
        ("   ", False, "empty"),
        ("Problem: " + "x" * 700, False, "too_long"),
        ("Problem: Ann has 7 pens.", False, "missing_expression"),
        ("Problem: Ann has 7 pens and buys", True, "truncated"),
        ("Expression: 3 + 4", False, "missing_problem"),
        ("Problem: Ann has 7 pens.\nExpression: __import__('os')", False, "bad_expression"),
        ("Problem: Ann has 7 pens.\nExpression: 7", False, "bad_expression"),
        ("Problem: Ann has 7 pens.\nExpression: 7 ** 2", False, "bad_expression"),
        ("Problem: Ann has 7 pens.\nExpression: 7 + 1 + 1 + 1 + 1 + 1", False, "bad_expression"),
        ("Problem: 7 pens for 2 friends.\nExpression: 7 / 2", False, "not_an_integer"),
        ("Problem: 7 pens for 0 friends.\nExpression: 7 / 0", False, "not_an_integer"),
    ],
)
def test_malformed_simulator_output_is_kept_with_its_reason(raw, truncated, reason):
    candidate = parse(raw, truncated)
    assert (candidate.task, candidate.reject_reason, candidate.raw) == (None, reason, raw)


def test_division_must_be_exact_at_every_step():
    assert evaluate("12 / 4 * 3") == (9, "/*")
    with pytest.raises(ValueError, match="not_an_integer"):
        evaluate("7 / 2 * 2")  # 7 is not divisible by 2, although the result would be an integer


def test_validation_rejects_unstated_numbers_duplicates_and_heldout_arithmetic():
    task = parse("Problem: Ann has 7 pens and buys 5.\nExpression: 7 + 5").task
    assert DOMAIN.validate(Candidate("", task), ValidationContext()).valid

    unstated = parse("Problem: Ann has 7 pens and buys some.\nExpression: 7 + 5").task
    assert DOMAIN.validate(Candidate("", unstated), ValidationContext()).reject_reason == "number_not_in_problem"

    seen = ValidationContext(
        seen_keys={DOMAIN.dedup_key(parse("Problem: ann has 7 pens, and buys 5!\nExpression: 5+7").task)}
    )
    assert DOMAIN.validate(Candidate("", task), seen).reject_reason == "duplicate"

    # A held-out family's operations, whatever the numbers: the simulator must not cross into a held-out family.
    heldout = ValidationContext(heldout_calls={DOMAIN.answer_key(parse("Problem: 1 and 2.\nExpression: 1 + 2").task)})
    assert DOMAIN.validate(Candidate("", task), heldout).reject_reason == "heldout_overlap"


def test_the_agent_scores_on_its_last_answer_line_exactly():
    task = parse("Problem: Ann has 7 pens and buys 5.\nExpression: 7 + 5").task
    assert DOMAIN.verify("7 + 5 = 12\nAnswer: 12", task).reward == 1.0
    assert DOMAIN.verify("Answer: 11\nNo wait. Answer: 12.", task).reward == 1.0
    assert DOMAIN.verify("Answer: 12\nActually Answer: 13", task).reward == 0.0
    assert DOMAIN.verify("Answer: 012", task).reward == 1.0
    assert DOMAIN.verify("Answer: 12.5", task).reward == 0.0  # not read as 12
    big = parse("Problem: 1000 pens and 200 more.\nExpression: 1000 + 200").task
    assert DOMAIN.verify("Answer: 1,200", big).reward == 1.0  # not read as 1
    unreadable = DOMAIN.verify("twelve", task)
    assert (unreadable.reward, unreadable.parsed_action, unreadable.parse_error) == (
        0.0,
        None,
        "no 'Answer: <integer>' line",
    )


def test_every_seed_round_trips_and_its_demonstration_scores_full_marks():
    seeds = DOMAIN.load_seeds()
    assert len(seeds) == len({s.task_id for s in seeds}) >= 30
    assert len({s.family for s in seeds}) >= 8  # enough families for a held-out split by family
    for seed in seeds:
        back = DOMAIN.parse_candidate(DOMAIN.simulator_target(seed), seed, seed.task_id, False)
        assert back.task == seed
        assert DOMAIN.validate(back, ValidationContext()).valid
        [(messages, reply)] = DOMAIN.demonstrations(seed)
        assert messages == DOMAIN.agent_messages(seed) and DOMAIN.verify(reply, seed).reward == 1.0


def test_the_simulator_prompt_carries_the_success_rate_and_the_band():
    messages = DOMAIN.simulator_messages(SEED, 0.9, alpha=0.5, k_min=0.1)
    assert "90%" in messages[-1]["content"] and "harder" in messages[-1]["content"]
    assert DOMAIN.simulator_target(SEED) in messages[-1]["content"]
