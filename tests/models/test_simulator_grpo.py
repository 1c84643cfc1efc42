"""The simulator's GRPO update on the tiny model: among one seed's variations it moves towards those the agent solved
nearer α and away from the rejected one (curriculum.batches.score_tasks' rewards, models.grpo's update)."""

from __future__ import annotations

import torch

from genenv.curriculum.batches import TaskOutcome, score_tasks
from genenv.curriculum.generator_rewards import CurriculumParams
from genenv.models.grpo import GroupSample, grpo_update
from genenv.models.policy import PolicyPair

CONTEXT = [1, 40, 41, 42, 43, 44]


def completion_logp(policy: PolicyPair, sample: GroupSample) -> float:
    ids = torch.tensor([sample.prompt_ids + sample.completion_ids])
    with torch.no_grad():
        log_probs = policy.model(ids).logits[0, :-1].log_softmax(-1)[len(sample.prompt_ids) - 1 :]
    return log_probs.gather(-1, torch.tensor(sample.completion_ids).unsqueeze(-1)).sum().item()


def test_the_simulator_moves_towards_variations_nearer_alpha_and_away_from_invalid_ones(policy: PolicyPair) -> None:
    outcomes = [
        TaskOutcome("b/v0", "b", "seed", 0.5),  # at α
        TaskOutcome("b/v1", "b", "seed", 0.75),
        TaskOutcome("b/v2", "b", "seed", 1.0),  # too easy
        TaskOutcome("b/v3", "b", "seed", None),  # rejected by the domain
    ]
    scores = score_tasks(outcomes, "alpha_curriculum", CurriculumParams(), invalid_reward=-1.0)
    rows = [
        GroupSample(CONTEXT, [60 + 10 * i, 61 + 10 * i, 62 + 10 * i], s.generator_reward, s.batch_id)
        for i, s in enumerate(scores)
    ]
    before = [completion_logp(policy, r) for r in rows]
    records = grpo_update(policy, "simulator", rows, lr=1e-2, kl_coef=0.1, epochs=4, minibatch_size=len(rows))
    policy.activate("simulator")
    gains = [completion_logp(policy, r) - b for r, b in zip(rows, before, strict=True)]
    assert not any(r["skipped"] for r in records)
    assert gains[0] > gains[1] > gains[2] > gains[3] and gains[3] < 0 < gains[0]
