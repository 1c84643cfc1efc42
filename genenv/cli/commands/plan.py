"""genenv plan: the per-GPU memory peak of each phase of a run (models/memory_plan.py), for one GPU size or several;
refuses, naming the phase and the numbers, a config that does not fit."""

from __future__ import annotations

import argparse
from pathlib import Path

from genenv.config import GenEnvConfig, check_values, load_config, parse_overrides
from genenv.models.memory_plan import (
    ARCHITECTURES,
    GIB,
    PROMPT_TOKENS,
    Architecture,
    PlanSettings,
    check_plan,
    memory_plan,
)

CARDS_GIB = (24.0, 40.0, 80.0, 141.0)
"""GPU sizes planned for when neither --gpu-memory nor a local GPU says which."""


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("plan", help="per-GPU memory of each phase of a run, and whether it fits")
    parser.add_argument("--config", help="YAML file of config fields (see `genenv config`)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one field")
    parser.add_argument(
        "--gpu-memory",
        type=float,
        nargs="+",
        metavar="GIB",
        help="GPU memory in GiB, one plan each (default: this machine's GPU, else 24 40 80 141)",
    )
    parser.add_argument(
        "--prompt-tokens", type=int, default=PROMPT_TOKENS, help="prompt length a training row is planned with"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # Planned, not run here: its values are checked, not its backend, domain, paths or cluster (`validate`), so a
    # GPU config plans on a laptop.
    config = check_values(load_config(args.config, parse_overrides(args.set)))
    arch = architecture(config)
    settings = PlanSettings.of(config, args.prompt_tokens)
    plans = [memory_plan(arch, settings, gib * GIB) for gib in args.gpu_memory or local_cards()]
    print("\n\n".join(plan.report() for plan in plans))
    for plan in plans:
        check_plan(plan)
    return 0


def architecture(config: GenEnvConfig) -> Architecture:
    """The model's shapes: shipped for known hub models, else read from its folder (resolved, converted or
    downloaded as a run would)."""
    if config.model in ARCHITECTURES:
        return Architecture.of(config.model)
    from genenv.models.loading import resolve_base_model

    return Architecture.of(config.model, Path(resolve_base_model(config.model, config.models_dir)))


def local_cards() -> tuple[float, ...]:
    import torch

    if torch.cuda.is_available():
        return (torch.cuda.get_device_properties(0).total_memory / GIB,)
    return CARDS_GIB
