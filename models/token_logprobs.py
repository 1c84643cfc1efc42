"""Each target token's log-probability and each position's entropy, without the full log-softmax in memory.

`logits.float().log_softmax(-1).gather(target)` keeps a [B, C, V] fp32 log-softmax for the backward pass and
builds two more in it (the gathered gradient scattered back, the log-softmax's input gradient): three copies of
rows x tokens x vocabulary in fp32 (bench/token_logprobs.py). `token_logprobs`
computes the same numbers a few positions at a time and keeps only the logits; the backward pass recomputes each
chunk's log-softmax. It calls the same kernels on the same rows, so values and gradients are bit-identical.
"""

from __future__ import annotations

import torch

POSITIONS_PER_CHUNK = 64


def _chunks(targets: torch.Tensor) -> list[tuple[int, slice]]:
    """(row, positions) pieces; `logits[row, positions]` is contiguous even when `logits` is a sliced view."""
    rows, width = targets.shape
    return [(r, slice(s, s + POSITIONS_PER_CHUNK)) for r in range(rows) for s in range(0, width, POSITIONS_PER_CHUNK)]


class _TokenLogProbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logp = torch.empty(targets.shape, dtype=torch.float32, device=logits.device)
        entropy = torch.empty_like(logp)
        for row, positions in _chunks(targets):
            log_probs = logits[row, positions].float().log_softmax(-1)
            logp[row, positions] = log_probs.gather(-1, targets[row, positions].unsqueeze(-1)).squeeze(-1)
            entropy[row, positions] = -(log_probs.exp() * log_probs).sum(-1)
        ctx.save_for_backward(logits, targets)
        ctx.mark_non_differentiable(entropy)
        return logp, entropy

    @staticmethod
    def backward(ctx, grad_logp: torch.Tensor, _grad_entropy: torch.Tensor) -> tuple[torch.Tensor, None]:
        logits, targets = ctx.saved_tensors
        grad = torch.empty(logits.shape, dtype=logits.dtype, device=logits.device)
        for row, positions in _chunks(targets):
            log_probs = logits[row, positions].float().log_softmax(-1)
            # What autograd does for gather then log_softmax: scatter the token gradients, then the softmax rule.
            grad_log_probs = torch.zeros_like(log_probs).scatter_add_(
                -1, targets[row, positions].unsqueeze(-1), grad_logp[row, positions].unsqueeze(-1).float()
            )
            grad_chunk = torch._log_softmax_backward_data(grad_log_probs, log_probs, -1, torch.float32)
            grad[row, positions] = grad_chunk.to(logits.dtype)
        return grad, None


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(log p(target) [B, C] in fp32, differentiable; entropy of each position's distribution [B, C], not)."""
    return _TokenLogProbs.apply(logits, targets)
