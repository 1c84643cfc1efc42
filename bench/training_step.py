"""Training throughput on the embedded SmolLM2 with LoRA: a GRPO update and a weighted-SFT (RWR) update, the
previous way (HEAD before this change, reimplemented here) and the current way, alternately in one run.

    python bench/training_step.py [--models data/models] [--rounds 2] [--kl 0.0]

Rows have the demo's spread of lengths (tool-call prompts of 120-600 tokens, answers of 8-48), drawn with a
fixed seed. The previous way cut micro-batches by rows in the order given (a shuffled minibatch mixes short
and long rows, so most of a micro-batch can be padding) and ran each SFT step as one padded batch; the current
way cuts length-sorted micro-batches by tokens (`length_batches`). Both start from the same adapter and
optimizer state each round; tokens/s counts the real (unpadded) prompt and completion tokens of the update.
The losses of the two ways are printed side by side: the cut changes the summation order, not the loss.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from genenv.models.grpo import GroupSample, _micro_batch_loss, _minibatches, _Row, group_advantages, grpo_update
from genenv.models.loading import EMBEDDED_MODEL, resolve_base_model
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.rwr import WeightedExample, weighted_sft


def rows(count: int, k: int, seed: int, vocab: int) -> tuple[list[GroupSample], list[WeightedExample]]:
    """GRPO groups of k rollouts (shared prompt, answers of 8-48 tokens, rewards 0/1) and SFT examples."""
    rng = random.Random(seed)
    samples = []
    for group in range(count // k):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(120, 600))]
        for _ in range(k):
            answer = [rng.randrange(vocab) for _ in range(rng.randint(8, 48))]
            samples.append(GroupSample(prompt, answer, float(rng.random() < 0.5), f"g{group}"))
    examples = [
        WeightedExample(
            [rng.randrange(vocab) for _ in range(rng.randint(120, 600))],
            [rng.randrange(vocab) for _ in range(rng.randint(8, 48))],
            rng.uniform(0.5, 2.0),
        )
        for _ in range(count)
    ]
    return samples, examples


def previous_grpo(
    policy: PolicyPair, samples: Sequence[GroupSample], lr: float, kl_coef: float, minibatch: int, micro: int
) -> list[float]:
    """HEAD's grpo_update, reimplemented: the same passes and loss, micro-batches cut by rows in plan order."""
    advantages = group_advantages(samples)
    live = [i for i, s in enumerate(samples) if kl_coef != 0.0 or advantages[i] != 0.0]

    def logprobs() -> list[torch.Tensor]:
        out = []
        with torch.no_grad():
            for start in range(0, len(live), micro):
                batch = [samples[i] for i in live[start : start + micro]]
                log_probs, targets, mask = policy.completion_logprobs(
                    [s.prompt_ids for s in batch], [s.completion_ids for s in batch]
                )
                logp = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1).masked_fill(~mask, 0.0)
                out += logp[mask].split([len(s.completion_ids) for s in batch])
        return out

    losses = []
    with policy.training("agent", lr) as (optimizer, params):
        old = logprobs()
        ref: list[torch.Tensor | None] = [None] * len(live)
        if kl_coef != 0.0:
            with policy.reference("agent"):
                ref = logprobs()
        by_index = {i: _Row(samples[i], advantages[i], o, r) for i, o, r in zip(live, old, ref, strict=True)}
        for plan in _minibatches(len(samples), minibatch, 1, 0):
            trained = [by_index[i] for i in plan if i in by_index]
            tokens = sum(len(samples[i].completion_ids) for i in plan)
            optimizer.zero_grad(set_to_none=True)
            total = 0.0
            for start in range(0, len(trained), micro):
                loss, _ = _micro_batch_loss(policy, trained[start : start + micro], kl_coef, 0.2)
                (loss / tokens).backward()
                total += loss.item() / tokens
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            losses.append(total)
    return losses


def previous_sft(policy: PolicyPair, examples: Sequence[WeightedExample], lr: float, batch: int) -> list[float]:
    """HEAD's weighted_sft without KL, reimplemented: each step one padded batch in shuffled order."""
    order = list(examples)
    random.Random(0).shuffle(order)
    losses = []
    with policy.training("simulator", lr, persist=False) as (optimizer, params):
        for start in range(0, len(order), batch):
            rows_ = order[start : start + batch]
            log_probs, targets, mask = policy.completion_logprobs(
                [e.prompt_ids for e in rows_], [e.target_ids for e in rows_]
            )
            nll = (-log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * mask).sum(-1) / mask.sum(-1)
            weights = torch.tensor([e.weight for e in rows_])
            loss = (weights * nll).sum() / weights.sum()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            losses.append(loss.item())
    return losses


def measured(policy: PolicyPair, run: Callable[[], list[float]]) -> tuple[float, list[float]]:
    """Seconds and losses of one update from the saved adapter and optimizer state."""
    state = {n: p.detach().clone() for n, p in policy.model.named_parameters() if "lora_" in n}
    optimizers = dict(policy.optimizer_states)
    started = time.perf_counter()
    losses = run()
    seconds = time.perf_counter() - started
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if name in state:
                param.copy_(state[name])
    policy.optimizer_states = optimizers
    return seconds, losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=Path("data") / "models", help="model cache folder")
    parser.add_argument("--rows", type=int, default=32, help="GRPO rollouts and SFT examples")
    parser.add_argument("--micro-batch", type=int, default=4, help="train_batch_size (the demo's: 4)")
    parser.add_argument("--minibatch", type=int, default=16, help="agent_minibatch_size")
    parser.add_argument("--kl", type=float, default=0.0, help="agent_kl_coef (the demo's: 0)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    policy = PolicyPair.load(resolve_base_model(EMBEDDED_MODEL, args.models), LoraSettings())
    samples, examples = rows(args.rows, 4, 0, policy.tokenizer.vocab_size)
    grpo_tokens = sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    sft_tokens = sum(len(e.prompt_ids) + len(e.target_ids) for e in examples)
    lr = 1e-4

    def grpo_now() -> list[float]:
        records = grpo_update(
            policy,
            "agent",
            samples,
            lr=lr,
            kl_coef=args.kl,
            minibatch_size=args.minibatch,
            micro_batch_size=args.micro_batch,
        )
        return [r["loss"] for r in records]

    def sft_now() -> list[float]:
        return [
            r["loss"]
            for r in weighted_sft(
                policy, "simulator", examples, lr=lr, kl_coef=0.0, persist=False, batch_size=args.micro_batch
            )
        ]

    def grpo_before() -> list[float]:
        return previous_grpo(policy, samples, lr, args.kl, args.minibatch, args.micro_batch)

    def sft_before() -> list[float]:
        return previous_sft(policy, examples, lr, args.micro_batch)

    times: dict[str, list[float]] = {name: [] for name in ("grpo before", "grpo now", "sft before", "sft now")}
    losses: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, run in (
            ("grpo before", grpo_before),
            ("grpo now", grpo_now),
            ("sft before", sft_before),
            ("sft now", sft_now),
        ):
            seconds, losses[name] = measured(policy, run)
            times[name].append(seconds)
    speed = {name: (grpo_tokens if "grpo" in name else sft_tokens) / statistics.median(t) for name, t in times.items()}
    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, rounds {args.rounds}")
    print(
        f"GRPO: {args.rows} rollouts ({grpo_tokens} tokens), minibatch {args.minibatch}, micro-batch "
        f"{args.micro_batch}, kl {args.kl} | SFT: {args.rows} examples ({sft_tokens} tokens), batch {args.micro_batch}"
    )
    for kind in ("grpo", "sft"):
        before, now = speed[f"{kind} before"], speed[f"{kind} now"]
        print(f"{kind.upper():<5} before {before:7.0f} tok/s | now {now:7.0f} tok/s | {now / before:.2f}x")
        pairs = zip(losses[f"{kind} before"], losses[f"{kind} now"], strict=True)
        print(f"      losses before / now: {', '.join(f'{a:.5f}/{b:.5f}' for a, b in pairs)}")


if __name__ == "__main__":
    main()
