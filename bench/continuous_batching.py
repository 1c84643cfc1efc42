"""Generation of the demo's shapes on the embedded SmolLM2: whole batches that decode until their longest answer
ends (the previous way, reimplemented here) versus rows that leave as they stop and let queued prompts join, and
the previous sampler (`generate`'s temperature and top-p warpers over the whole vocabulary, `torch.multinomial`
over the batch) versus `next_tokens` (the nucleus among the 64 likeliest tokens, one uniform draw per row).

    python bench/continuous_batching.py [--models data/models] [--tasks 24] [--k 4] [--batch-size 16]
                                        [--precision bfloat16|float32] [--rounds 2] [--model DIR] [--smoke]

Prompts are the agent's prompts for the first `--tasks` tool-call seeds (about 250 tokens). Two shapes, as the
demo runs them, up to 48 new tokens: the rollout stage (each prompt `--k` times, sampled at temperature 0.7 and
top-p 0.9) and the held-out evaluation (each prompt once, greedy). Printed, from `--rounds` interleaved rounds:
the best seconds and generated tokens/s of each way, and how many greedy answers the ways share (fp32 makes
them identical; in bf16 which rows decode together changes roundings).
"""

from __future__ import annotations

import os
import time

import torch
from agent_prompts import agent_prompts, rollout_arguments  # bench/ is the script's folder
from transformers import TemperatureLogitsWarper, TopPLogitsWarper

from genenv.models.decoding import DecodingRows
from genenv.models.sampling import SamplingSettings
from genenv.models.transformers_backend import TransformersBackend


class WholeBatches(TransformersBackend):
    """Length-sorted batches admitted only when the previous one is done, its rows decoding until all are."""

    def admitted(self, rows: DecodingRows | None, queued: list[int], budget: int, max_new_tokens: int) -> int:
        return 0 if rows is not None else super().admitted(rows, queued, budget, max_new_tokens)

    def compacts(self, rows: DecodingRows) -> bool:
        return False


class WholeBatchesSortedSampler(WholeBatches):
    """Whole batches, sampled as `generate` samples: its warpers, then one `torch.multinomial` for the batch."""

    def sample(
        self, logits: torch.Tensor, generators: list[torch.Generator], sampling: SamplingSettings
    ) -> torch.Tensor:
        if sampling.temperature <= 0:
            return logits.float().argmax(-1)
        scores = TemperatureLogitsWarper(sampling.temperature)(None, logits.float())
        scores = TopPLogitsWarper(sampling.top_p)(None, scores)
        return torch.multinomial(scores.softmax(-1), 1).squeeze(-1)


def main() -> None:
    args = rollout_arguments(__doc__.split("\n\n")[0], tasks=24)
    policy, tasks = agent_prompts(args)
    shapes = {
        f"rollouts ({args.tasks} x {args.k}, sampled)": (
            [c for c in tasks for _ in range(args.k)],
            SamplingSettings(max_new_tokens=48, temperature=0.7, top_p=0.9, seed=1),
        ),
        f"held-out ({args.tasks}, greedy)": (tasks, SamplingSettings(max_new_tokens=48, temperature=0)),
    }
    ways = {
        "whole batches, sort sampler": WholeBatchesSortedSampler(policy, args.batch_size),
        "whole batches": WholeBatches(policy, args.batch_size),
        "rows join as others end": TransformersBackend(policy, args.batch_size),
    }
    print(
        f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}, {args.precision}, "
        f"batches of {args.batch_size} rows, best of {args.rounds} interleaved rounds"
    )
    for shape, (conversations, sampling) in shapes.items():
        seconds: dict[str, list[float]] = {name: [] for name in ways}
        answers = {}
        for round_ in range(args.rounds):
            for name in list(ways)[:: -1 if round_ % 2 else 1]:
                started = time.perf_counter()
                answers[name] = ways[name].generate("agent", conversations, sampling)
                seconds[name].append(time.perf_counter() - started)
        print(shape)
        for name, answered in answers.items():
            tokens = sum(len(c.completion_ids) for c in answered)
            best = min(seconds[name])
            rounds = ", ".join(f"{s:.1f}" for s in seconds[name])
            print(f"  {name:<28} {best:6.1f} s  {tokens / best:5.0f} tok/s  (rounds: {rounds})")
        previous, whole, joining = (min(seconds[name]) for name in ways)
        line = f"  now {previous / joining:.2f}x the previous way; rows joining alone {whole / joining:.2f}x"
        if sampling.temperature <= 0:
            same = sum(
                a.completion_ids == b.completion_ids
                for a, b in zip(answers["whole batches"], answers["rows join as others end"], strict=True)
            )
            line += f"; identical greedy answers to whole batches {same}/{len(conversations)}"
        print(line)


if __name__ == "__main__":
    main()
