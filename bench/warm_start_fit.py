"""How well the agent's warm start fits: SFT of the agent's adapter on every training seed in BFCL's prompt, then its
greedy success on those seeds and on the held-out seeds, after each epoch, for one LoRA setting.

    python bench/warm_start_fit.py [--models data/models] [--targets q_proj,v_proj] [--rank 8] [--lr 1e-3]
        [--epochs 3] [--batch 8] [--precision bfloat16] [--limit N] [--model DIR] [--smoke]

The seeds are split and checked as the seed stage does (whole function families held out, a training seed that
gives a held-out answer left out). Each epoch is one pass over the training seeds in a new order, continuing one
AdamW run, as `warm_start_epochs` does in a run. Prints per epoch: the mean loss, training-seed and held-out success
with 95% bootstrap intervals (held-out split into calls and abstentions), and the seconds it took.
"""

from __future__ import annotations

import argparse
import time

from options import add_model_options, base_model, parsed  # bench/ is the script's folder

from genenv.config import GenEnvConfig
from genenv.curriculum.pools import is_heldout
from genenv.domains.base import Candidate, TaskInstance, ValidationContext, get_domain
from genenv.evaluation.bootstrap import bootstrap_mean
from genenv.models.policy import LoraSettings, PolicyPair
from genenv.models.rwr import encode_example, weighted_sft
from genenv.models.sampling import SamplingSettings
from genenv.models.transformers_backend import TransformersBackend


def split_seeds(domain, fraction: float) -> tuple[list[TaskInstance], list[TaskInstance]]:
    seeds = domain.load_seeds()
    heldout = [s for s in seeds if is_heldout(s.family, fraction)]
    context = ValidationContext(heldout_calls={domain.answer_key(s) for s in heldout})
    train = [s for s in seeds if s not in heldout and domain.validate(Candidate("", s), context).valid]
    return train, heldout


def success(backend, domain, tasks: list[TaskInstance]) -> list[float]:
    completions = backend.generate("agent", [domain.agent_messages(t) for t in tasks], SamplingSettings(48, 0.0))
    return [domain.verify(c.text, t).reward for c, t in zip(completions, tasks, strict=True)]


def rate(values: list[float]) -> str:
    interval = bootstrap_mean(values)
    return f"{100 * interval.value:5.1f}% [{100 * interval.low:.1f}, {100 * interval.high:.1f}] of {interval.n}"


def main() -> None:
    parser = add_model_options(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    parser.add_argument("--targets", default=GenEnvConfig.lora_targets)
    parser.add_argument("--rank", type=int, default=GenEnvConfig.lora_r)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--precision", default="bfloat16")
    parser.add_argument("--limit", type=int, help="train on and score only the first N seeds of each split")
    args = parsed(parser, epochs=1, batch=2, limit=4)

    domain = get_domain("tool_call")
    train, heldout = (seeds[: args.limit] for seeds in split_seeds(domain, GenEnvConfig.heldout_fraction))
    lora = LoraSettings(r=args.rank, alpha=2 * args.rank, target_modules=tuple(args.targets.split(",")))
    policy = PolicyPair.load(base_model(args), lora, precision=args.precision)
    trainable = sum(p.numel() for n, p in policy.model.named_parameters() if ".agent." in n)
    print(
        f"targets {args.targets}, rank {args.rank} ({trainable / 1e6:.2f}M parameters), lr {args.lr}, batch "
        f"{args.batch}, {args.precision}; {len(train)} training seeds, {len(heldout)} held out"
    )
    examples = [encode_example(policy.tokenizer, m, reply) for s in train for m, reply in domain.demonstrations(s)]
    backend = TransformersBackend(policy)
    abstaining = [domain.is_abstention(t) for t in heldout]
    for epoch in range(1, args.epochs + 1):
        started = time.perf_counter()
        records = weighted_sft(
            policy, "agent", examples, lr=args.lr, kl_coef=0.0, batch_size=args.batch, seed=epoch, persist=True
        )
        trained = time.perf_counter() - started
        on_train, on_heldout = success(backend, domain, train), success(backend, domain, heldout)
        calls = [v for v, a in zip(on_heldout, abstaining, strict=True) if not a]
        abstentions = [v for v, a in zip(on_heldout, abstaining, strict=True) if a]
        loss = sum(r["loss"] for r in records) / len(records)
        print(
            f"epoch {epoch}: loss {loss:.3f} | training seeds {rate(on_train)} | held-out {rate(on_heldout)} "
            f"(calls {rate(calls)}, abstentions {rate(abstentions)}) | {trained:.0f} s training, "
            f"{time.perf_counter() - started - trained:.0f} s scoring",
            flush=True,
        )


if __name__ == "__main__":
    main()
