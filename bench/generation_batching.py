"""Greedy generation on the embedded SmolLM2: one conversation at a time versus one batch of 16.

Usage: python bench/generation_batching.py [CACHE_DIR]   (default ./data/models)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

from genenv.models.generation import Completion, SamplingSettings, TransformersBackend
from genenv.models.loading import EMBEDDED_MODEL, resolve_base_model
from genenv.models.policy import LoraSettings, PolicyPair

QUESTIONS = [
    "What is the capital of France?",
    "Name a primary color.",
    "What is 12 times 7?",
    "Give one synonym for happy.",
    "Which planet is closest to the sun?",
    "What does a thermometer measure?",
    "Translate 'thank you' into Spanish.",
    "What is the boiling point of water in Celsius?",
    "Name a mammal that can fly.",
    "How many days are in a leap year?",
    "What gas do plants absorb from the air?",
    "Who wrote Romeo and Juliet?",
    "What is the largest ocean on Earth?",
    "Spell the word 'necessary' backwards.",
    "What is the square root of 81?",
    "Call the weather tool for Paris as [get_weather(city=...)].",
]
SAMPLING = SamplingSettings(max_new_tokens=32, temperature=0)


def timed(backend: TransformersBackend, conversations, one_at_a_time: bool) -> tuple[list[Completion], float]:
    started = time.perf_counter()
    if one_at_a_time:
        completions = [backend.generate("agent", [c], SAMPLING)[0] for c in conversations]
    else:
        completions = backend.generate("agent", conversations, SAMPLING)
    return completions, time.perf_counter() - started


def tokens_per_second(completions: list[Completion], seconds: float) -> float:
    return sum(len(c.completion_ids) for c in completions) / seconds


def main() -> None:
    cache_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("data/models")
    policy = PolicyPair.load(resolve_base_model(EMBEDDED_MODEL, cache_dir), LoraSettings())
    conversations = [[{"role": "user", "content": q}] for q in QUESTIONS]
    backend = TransformersBackend(policy, batch_size=len(conversations))
    timed(backend, conversations[:2], one_at_a_time=False)
    sequential, sequential_s = timed(backend, conversations, one_at_a_time=True)
    batched, batched_s = timed(backend, conversations, one_at_a_time=False)
    same = sum(a.completion_ids == b.completion_ids for a, b in zip(sequential, batched, strict=True))
    slow, fast = tokens_per_second(sequential, sequential_s), tokens_per_second(batched, batched_s)
    load = os.getloadavg()[0]
    print(f"torch threads {torch.get_num_threads()}, load average {load:.1f}, max_new_tokens {SAMPLING.max_new_tokens}")
    print(f"example: {QUESTIONS[0]!r} -> {batched[0].text!r}")
    print(f"identical completions: {same}/{len(conversations)}")
    print(f"sequential {slow:.1f} tok/s | batched({len(conversations)}) {fast:.1f} tok/s | ratio {fast / slow:.1f}x")


if __name__ == "__main__":
    main()
