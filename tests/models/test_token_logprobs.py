from __future__ import annotations

import random

import pytest
import torch

from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.token_logprobs import POSITIONS_PER_CHUNK
from tests.models.test_policy import perturb


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_token_logprobs_are_bit_identical_to_gathering_the_log_softmax(tiny_model_dir, precision) -> None:
    """Values, entropies and LoRA gradients, on completions longer than a chunk and of different lengths."""
    policy = PolicyPair.load(tiny_model_dir, LoraSettings(), precision=precision)
    perturb(policy, "agent")
    policy.activate("agent")
    rng = random.Random(0)
    prompts = [[1, *(rng.randrange(3, 200) for _ in range(n))] for n in (5, 30, 12)]
    completions = [[rng.randrange(3, 200) for _ in range(n)] for n in (2 * POSITIONS_PER_CHUNK + 7, 40, 90)]
    weights = torch.tensor([0.5, 2.0, 1.0]).unsqueeze(-1)

    def gradients(loss: torch.Tensor) -> list[torch.Tensor]:
        params = [p for p in policy.model.parameters() if p.requires_grad]
        return list(torch.autograd.grad(loss, params))

    log_probs, targets, mask = policy.completion_logprobs(prompts, completions)
    expected_logp = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    expected_entropy = -(log_probs.exp() * log_probs).sum(-1)
    expected_grads = gradients((expected_logp * mask * weights).sum())

    logp, entropy, token_mask = policy.completion_token_logprobs(prompts, completions)
    assert torch.equal(token_mask, mask)
    assert torch.equal(logp, expected_logp)
    assert torch.equal(entropy, expected_entropy) and not entropy.requires_grad
    grads = gradients((logp * mask * weights).sum())
    assert any(g.abs().sum() > 0 for g in grads)
    assert all(torch.equal(g, e) for g, e in zip(grads, expected_grads, strict=True))
