"""What the rollout-shaped generation benchmarks share: their arguments, the embedded SmolLM2 (or `--model`), and the
agent's prompts for the first tool-call seeds (about 250 tokens each, 135 of them the system prompt)."""

from __future__ import annotations

import argparse

from options import add_model_options, base_model, parsed  # bench/ is the script's folder

from genenv.domains.base import get_domain
from genenv.models.policy import LoraSettings, PolicyPair


def rollout_arguments(description: str, tasks: int) -> argparse.Namespace:
    """--models, --model, --smoke, --tasks (seeds, `tasks` by default), --k, --batch-size, --precision, --rounds."""
    parser = add_model_options(argparse.ArgumentParser(description=description))
    parser.add_argument("--tasks", type=int, default=tasks)
    parser.add_argument("--k", type=int, default=4, help="answers per task (rollouts_per_task)")
    parser.add_argument("--batch-size", type=int, default=16, help="generation_batch_size")
    parser.add_argument("--precision", choices=("float32", "bfloat16"), default="bfloat16")
    parser.add_argument("--rounds", type=int, default=2)
    return parsed(parser, tasks=2, k=2, batch_size=4, rounds=1)


def agent_prompts(args: argparse.Namespace) -> tuple[PolicyPair, list[list[dict[str, str]]]]:
    """The model at `--precision`, and the agent's conversation for each of the first `--tasks` seeds."""
    policy = PolicyPair.load(base_model(args), LoraSettings(), precision=args.precision)
    domain = get_domain("tool_call")
    return policy, [domain.agent_messages(task) for task in domain.load_seeds()[: args.tasks]]
