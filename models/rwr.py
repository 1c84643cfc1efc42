"""Reward-weighted regression: weighted SFT plus KL to the role's reference adapter (warm start, simulator update)."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from genenv.models.data_parallel import added_across_ranks, my_rows, rank_and_world
from genenv.models.policy import PolicyPair
from genenv.models.sampling import encode_prompt


@dataclass(frozen=True)
class WeightedExample:
    prompt_ids: list[int]
    target_ids: list[int]
    weight: float


def encode_example(
    tokenizer, messages: list[dict[str, str]], target: str, weight: float = 1.0, max_tokens: int = 1024
) -> WeightedExample:
    """Prompt as the model sees it at generation time; the target ends with EOS so the model learns to stop.

    Over-long prompts lose their oldest tokens; a target that leaves no room for a prompt is an error.
    """
    prompt_ids = encode_prompt(tokenizer, messages)
    target_ids = tokenizer(target, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    room = max_tokens - len(target_ids)
    if room < 1:
        raise ValueError(f"target of {len(target_ids)} tokens does not fit in max_tokens={max_tokens}")
    return WeightedExample(prompt_ids[-room:], target_ids, weight)


def weighted_sft(
    policy: PolicyPair,
    role: str,
    examples: Sequence[WeightedExample],
    *,
    lr: float,
    kl_coef: float,
    epochs: int = 1,
    batch_size: int = 8,
    seed: int = 0,
    max_grad_norm: float = 1.0,
    persist: bool = True,
    progress: Callable[[int], None] | None = None,
    first_epoch: int = 0,
    keep_optimizer: bool | None = None,
) -> list[dict]:
    """One optimizer step per batch; `progress(n)` gets each batch's row count. `first_epoch`: the epochs before it
    ran in earlier calls (the warm start trains an epoch a call, tasks/warm_start.py): their shuffles are drawn and
    skipped and the steps numbered on from theirs, so with the AdamW state carried (`persist`), the calls train what
    one call would. `keep_optimizer` as `keep` in `PolicyPair.training`.

    Loss = sum_i w_i NLL_i / sum_i w_i + kl_coef * token-mean KL(pi_role || pi_ref) over target tokens, where
    NLL_i is example i's mean target-token NLL, pi_ref is `policy.reference(role)` and the KL is exact over
    the vocabulary. Zero-weight examples carry no signal and are dropped before batching. `persist` as in
    `PolicyPair.training`: False for the warm start (a fresh AdamW, nothing kept).
    """
    if any(e.weight < 0 for e in examples):
        raise ValueError("weights must be non-negative")
    kept = [e for e in examples if e.weight > 0]
    if not kept:
        return []
    rng = random.Random(seed)
    records: list[dict] = []
    steps_before = first_epoch * math.ceil(len(kept) / batch_size)
    training = policy.training(role, lr, persist, keep_optimizer)
    with training as (optimizer, params), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for epoch in range(first_epoch + epochs):
            order = list(kept)
            rng.shuffle(order)
            if epoch < first_epoch:
                continue
            for start in range(0, len(order), batch_size):
                batch = order[start : start + batch_size]
                step = steps_before + len(records)
                records.append(_step(policy, role, optimizer, params, batch, kl_coef, max_grad_norm, step))
                if progress is not None:
                    progress(len(batch))
    return records


def _step(
    policy: PolicyPair,
    role: str,
    optimizer: torch.optim.Optimizer,
    params: list[torch.nn.Parameter],
    batch: Sequence[WeightedExample],
    kl_coef: float,
    max_grad_norm: float,
    step: int,
) -> dict:
    """One optimizer step over `batch`, computed in length-sorted micro-batches (little padding) whose
    gradients add up to the batch's: every term is normalised by the whole batch's weight or token count. Data
    parallel (models/data_parallel.py): this rank computes its rows of the batch, and the ranks add their gradients."""
    started = time.perf_counter()
    total_weight = sum(e.weight for e in batch)
    tokens = max(sum(len(e.target_ids) for e in batch), 1)
    sums = {"nll": 0.0, "kl": 0.0, "entropy": 0.0}
    optimizer.zero_grad(set_to_none=True)
    mine = [batch[i] for i in my_rows(range(len(batch)), *rank_and_world())]
    lengths = [len(e.prompt_ids) + len(e.target_ids) for e in mine]
    for indices in policy.micro_batches([e.prompt_ids for e in mine], lengths, len(batch)) if mine else []:
        micro = [mine[i] for i in indices]
        prompts = [e.prompt_ids for e in micro]
        targets_ids = [e.target_ids for e in micro]
        kl = None
        if kl_coef != 0.0:  # the exact KL needs both whole distributions
            with torch.no_grad(), policy.reference(role):  # before the policy's pass: no adapter switch mid-graph
                ref_log_probs, _, _ = policy.completion_logprobs(prompts, targets_ids)
            log_probs, targets, mask = policy.completion_logprobs(prompts, targets_ids)
            logp = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            with torch.no_grad():
                entropy = -(log_probs.exp() * log_probs).sum(-1)
            kl = ((log_probs.exp() * (log_probs - ref_log_probs)).sum(-1) * mask).sum() / tokens
        else:
            logp, entropy, mask = policy.completion_token_logprobs(prompts, targets_ids)
        nll = (-logp * mask).sum(-1) / mask.sum(-1).clamp(min=1)
        weights = torch.tensor([e.weight for e in micro], dtype=nll.dtype, device=nll.device)
        loss = (weights * nll).sum() / total_weight
        sums["nll"] += loss.item()
        if kl is not None:
            sums["kl"] += kl.item()
            loss = loss + kl_coef * kl
        sums["entropy"] += ((entropy * mask).sum() / tokens).item()
        loss.backward()
    sums = added_across_ranks(params, sums)
    grad_norm = torch.nn.utils.clip_grad_norm_(params, max_grad_norm).item()
    optimizer.step()
    return {
        "step": step,
        "loss": sums["nll"] + kl_coef * sums["kl"],
        "nll": sums["nll"],
        "kl": sums["kl"] if kl_coef != 0.0 else None,
        "n_rows": len(batch),
        "seconds": time.perf_counter() - started,
        "grad_norm": grad_norm,
        "entropy": sums["entropy"],
    }
