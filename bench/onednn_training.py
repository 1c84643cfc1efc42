"""An fp32 training step on the embedded SmolLM2 with its frozen linear layers multiplied by oneDNN (`OneDnnLinear`,
as `PolicyPair.load` makes them) against the same layers as plain `torch.nn.Linear` (MKL's matmul), in one process.

    python bench/onednn_training.py [--models data/models] [--rows 4] [--tokens 300] [--rounds 4] [--model DIR]
                                    [--smoke]

Each round runs one forward and backward pass of the agent's adapter (labels = inputs) through each policy, in
alternating order; prints the median seconds of each, their ratio, both losses and the largest relative
difference between their LoRA gradients.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from options import add_model_options, base_model, parsed  # bench/ is the script's folder

from genenv.models.cpu.onednn_linears import OneDnnLinear
from genenv.models.policy import LoraSettings, PolicyPair


def training_step(policy: PolicyPair, ids: torch.Tensor) -> tuple[float, dict[str, torch.Tensor]]:
    """(loss, LoRA gradients) of one forward and backward pass."""
    with policy.training("agent", 1e-4, persist=False):
        policy.model.zero_grad()
        loss = policy.model(input_ids=ids, labels=ids).loss
        loss.backward()
        return loss.item(), {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=4)
    args = parsed(parser, rows=2, tokens=16, rounds=1)

    base = base_model(args)
    policies = {"plain (MKL)": PolicyPair.load(base, LoraSettings()), "oneDNN": PolicyPair.load(base, LoraSettings())}
    for module in policies["plain (MKL)"].model.modules():
        if isinstance(module, OneDnnLinear):
            module.__class__ = torch.nn.Linear
    for policy in policies.values():  # B = 0 would give A no gradient
        with torch.no_grad():
            for name, param in policy.model.named_parameters():
                if "lora_B.agent." in name:
                    param.normal_(0.0, 0.02, generator=torch.Generator().manual_seed(0))
    high = min(40_000, len(policies["oneDNN"].tokenizer))
    ids = torch.randint(100, high, (args.rows, args.tokens), generator=torch.Generator().manual_seed(1))

    seconds: dict[str, list[float]] = {name: [] for name in policies}
    results = {name: training_step(policy, ids) for name, policy in policies.items()}  # warm-up
    for round_ in range(args.rounds):
        for name in list(policies)[:: -1 if round_ % 2 else 1]:
            started = time.perf_counter()
            results[name] = training_step(policies[name], ids)
            seconds[name].append(time.perf_counter() - started)
    (plain_loss, plain_grads), (onednn_loss, onednn_grads) = results.values()
    difference = max(((onednn_grads[n] - g).norm() / g.norm()).item() for n, g in plain_grads.items())
    plain, onednn = (statistics.median(seconds[name]) for name in policies)
    print(
        f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}; float32 forward and "
        f"backward of {args.rows} x {args.tokens} tokens, median of {args.rounds} alternating rounds"
    )
    print(
        f"plain (MKL) {plain:.2f} s | oneDNN {onednn:.2f} s | {plain / onednn:.2f}x; losses {plain_loss:.6f} / "
        f"{onednn_loss:.6f}; LoRA gradients' largest relative difference {difference:.1e}"
    )


if __name__ == "__main__":
    main()
