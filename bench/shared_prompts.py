"""Rollouts of the demo's shape on the embedded SmolLM2: k answers to each tool-call task, with every row's prompt
prefilled (the previous way, reimplemented here) versus the tokens shared by rows prefilled once: the system
prompt all prompts start with once per call, and each distinct prompt once for its k rows.

    python bench/shared_prompts.py [--models data/models] [--tasks 16] [--k 4] [--precision bfloat16|float32]
                                   [--model DIR] [--smoke]

The prompts are the agent's prompts for the first `--tasks` tool-call seeds (about 250 tokens, their answers
about 20), each repeated `--k` times as the rollout stage asks, in batches of `--batch-size` rows. Printed, from
`--rounds` interleaved rounds: the best seconds of each way for sampled answers at the demo's settings, and how
many greedy answers the two ways share (in bf16 a different split of the prefill rounds differently). `--k 1` is
the held-out evaluation's shape: distinct prompts, only the system prompt shared.
"""

from __future__ import annotations

import os
import time

import torch
from agent_prompts import agent_prompts, rollout_arguments  # bench/ is the script's folder

from genenv.models.cpu.kv_cache import DecodingCache
from genenv.models.sampling import SamplingSettings
from genenv.models.transformers_backend import TransformersBackend, padded


class EveryRowPrefilled(TransformersBackend):
    """The backend before shared prompt tokens: each row's whole prompt left-padded and prefilled."""

    def prefix(self, prompts: list[list[int]]) -> tuple[int, None]:
        return 0, None

    def prefilled(
        self, prefix: tuple[int, None], prompts: list[list[int]]
    ) -> tuple[DecodingCache, torch.Tensor, torch.Tensor]:
        input_ids, attention = padded(prompts, self.policy.tokenizer.pad_token_id)
        kv_cache = DecodingCache()
        return kv_cache, attention, self.prefill(kv_cache, input_ids, attention)


def main() -> None:
    args = rollout_arguments(__doc__.split("\n\n")[0], tasks=16)
    policy, tasks = agent_prompts(args)
    conversations = [c for c in tasks for _ in range(args.k)]
    sampled = SamplingSettings(max_new_tokens=48, temperature=0.7, top_p=0.9, seed=1)
    greedy = SamplingSettings(max_new_tokens=48, temperature=0)
    ways = {
        "every row prefilled": EveryRowPrefilled(policy, args.batch_size),
        "shared tokens once": TransformersBackend(policy, args.batch_size),
    }
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    for round_ in range(args.rounds):
        for name in list(ways)[:: -1 if round_ % 2 else 1]:
            started = time.perf_counter()
            ways[name].generate("agent", conversations, sampled)
            seconds[name].append(time.perf_counter() - started)
    answers = {name: backend.generate("agent", conversations, greedy) for name, backend in ways.items()}
    prompts = [c.prompt_ids for c in answers["shared tokens once"]]

    print(
        f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, {args.precision}, "
        f"{args.tasks} tasks x {args.k} answers ({sum(map(len, prompts)) / len(prompts):.0f}-token prompts), "
        f"batches of {args.batch_size} rows, best of {args.rounds} interleaved rounds"
    )
    for name in ways:
        print(f"{name:<22} {min(seconds[name]):6.1f} s  (rounds: {', '.join(f'{s:.1f}' for s in seconds[name])})")
    before, after = (min(seconds[name]) for name in ways)
    same = sum(a.completion_ids == b.completion_ids for a, b in zip(*answers.values(), strict=True))
    print(f"shared tokens once: {before / after:.2f}x faster; identical greedy answers {same}/{len(prompts)}")


if __name__ == "__main__":
    main()
