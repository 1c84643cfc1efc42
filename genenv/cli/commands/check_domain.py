"""genenv check-domain NAME: the checks a domain author runs before a generation, on the installed domain.

What the loop assumes of a domain and would otherwise find out in the middle of a run: its seeds load with distinct
ids, each seed survives the trip through the simulator's format (`simulator_target`, then `parse_candidate` and
`validate` as a run does, give the seed back), each passes the domain's own validation, each seed's worked example
(`demonstrations`) scores 1 under `verify`, and the held-out split leaves families both to train on and to measure
on. `--families` prints the split. The same checks from Python: `check_domain(domain, heldout_fraction)`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field

from genenv.config import ConfigError, load_config, parse_overrides
from genenv.curriculum.pools import is_heldout
from genenv.domains.base import (
    DOMAINS,
    Candidate,
    Domain,
    DomainUnavailable,
    MultiTurnDomain,
    TaskInstance,
    ValidationContext,
)

SHOWN = 5
"""Failures named per check; the rest are counted."""


@dataclass
class Check:
    """One check's outcome: what was checked, and each seed (or family) that failed it, with why."""

    name: str
    checked: int
    failures: list[str] = field(default_factory=list)
    note: str = ""

    def line(self) -> str:
        verdict = f"ok ({self.checked})" if not self.failures else f"FAILED for {len(self.failures)} of {self.checked}"
        named = "; ".join(self.failures[:SHOWN]) + (
            f"; {len(self.failures) - SHOWN} more" if self.failures[SHOWN:] else ""
        )
        return f"{self.name}: {verdict}" + (f", {self.note}" if self.note else "") + (f": {named}" if named else "")


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("check-domain", help="check an installed domain: seeds, formats, scoring, split")
    parser.add_argument("name", help="the domain's name (its entry point in the group genenv.domains)")
    parser.add_argument("--config", help="YAML config the domain is set up from (its heldout_fraction too)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one field")
    parser.add_argument("--families", action="store_true", help="only list the families, held out or trained on")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config, {**parse_overrides(args.set), "domain": args.name})
    if args.name not in DOMAINS:
        raise ConfigError(f"check-domain: no domain {args.name!r}; installed: {DOMAINS.names()}{DOMAINS.how_to_add}")
    try:
        domain = DOMAINS.get(args.name)(config)
    except DomainUnavailable as missing:
        raise ConfigError(f"check-domain: {args.name}: {missing}") from None
    seeds = domain.load_seeds()
    if args.families:
        return show_families(args.name, seeds, config.heldout_fraction)
    results = check_domain(domain, config.heldout_fraction, seeds)
    print("\n".join(result.line() for result in results))
    failed = [result.name for result in results if result.failures]
    if failed:
        raise ConfigError(f"check-domain: {args.name} failed {', '.join(failed)}")
    print(f"{args.name}: every check passed")
    return 0


def show_families(name: str, seeds: list[TaskInstance], fraction: float) -> int:
    """Print which families are held out and which are trained on; refuse a split with none or all held out."""
    held, trained = families(seeds, fraction)
    print(f"held out at heldout_fraction {fraction} ({len(held)} of {len(held) + len(trained)} families):")
    print("".join(f"  {family}\n" for family in held), end="")
    print(f"trained on ({len(trained)}):")
    print("".join(f"  {family}\n" for family in trained), end="")
    split = heldout_split(seeds, fraction)
    if split.failures:
        raise ConfigError(f"check-domain: {name}: {split.failures[0]}")
    return 0


def check_domain(domain: Domain, heldout_fraction: float, seeds: list[TaskInstance] | None = None) -> list[Check]:
    """Every check, in the order a run meets what they check."""
    seeds = domain.load_seeds() if seeds is None else seeds
    return [
        distinct_ids(seeds),
        per_seed("round trip through the simulator's format", seeds, lambda s: round_trip(domain, s)),
        per_seed("the domain's own validation", seeds, lambda s: validation(domain, s)),
        per_seed("worked example scores 1", seeds, lambda s: worked_example(domain, s)),
        heldout_split(seeds, heldout_fraction),
    ]


def families(seeds: list[TaskInstance], fraction: float) -> tuple[list[str], list[str]]:
    """(held-out families, trained-on families), each sorted: the split every run makes (curriculum/pools.py)."""
    names = sorted({seed.family for seed in seeds})
    return [f for f in names if is_heldout(f, fraction)], [f for f in names if not is_heldout(f, fraction)]


def heldout_split(seeds: list[TaskInstance], fraction: float) -> Check:
    """A run needs families to train on and held-out families to measure on: none or all held out is refused."""
    held, trained = families(seeds, fraction)
    check = Check("held-out split of the families", len(held) + len(trained), note=f"{len(held)} held out")
    if not seeds:
        check.failures.append("no seeds")
    elif not held:
        check.failures.append(f"no family is held out at heldout_fraction {fraction}: nothing would measure the agent")
    elif not trained:
        check.failures.append(f"every family is held out at heldout_fraction {fraction}: nothing would train")
    return check


def distinct_ids(seeds: list[TaskInstance]) -> Check:
    seen: set[str] = set()
    repeated = [s.task_id for s in seeds if s.task_id in seen or seen.add(s.task_id)]
    check = Check("seeds with distinct ids and a family", len(seeds), [f"{i}: id repeated" for i in repeated])
    check.failures += [f"{s.task_id}: no family" for s in seeds if not s.family]
    return check


def per_seed(name: str, seeds: list[TaskInstance], problem: Callable[[TaskInstance], str | None]) -> Check:
    """A check of every seed; `problem` says what is wrong with one (None: nothing)."""
    check = Check(name, len(seeds))
    for seed in seeds:
        try:
            found = problem(seed)
        except Exception as exc:  # a domain's bug is a finding here, named with its seed
            found = f"raised {type(exc).__name__}: {exc}"
        if found:
            check.failures.append(f"{seed.task_id}: {found}")
    return check


def round_trip(domain: Domain, seed: TaskInstance) -> str | None:
    """The simulator is taught `simulator_target(seed)`; a run parses what it writes, then validates it (which may
    complete the task: text_game compiles the game and records its walkthrough). That must give the seed back."""
    parsed = domain.parse_candidate(domain.simulator_target(seed), seed, seed.task_id, False)
    if parsed.task is None:
        return f"its simulator target does not parse ({parsed.reject_reason})"
    checked = domain.validate(parsed, ValidationContext())
    if checked.task is None or not checked.valid:
        return f"its simulator target parses but is rejected as {checked.reject_reason}"
    differs = [part for part in ("spec", "answer", "family") if getattr(checked.task, part) != getattr(seed, part)]
    return f"comes back with another {', '.join(differs)}" if differs else None


def validation(domain: Domain, seed: TaskInstance) -> str | None:
    checked = domain.validate(Candidate(raw="", task=seed), ValidationContext())
    return None if checked.valid else f"rejected as {checked.reject_reason}"


def worked_example(domain: Domain, seed: TaskInstance) -> str | None:
    """The seed's demonstrations, answered as the agent's warm start is taught, score 1 (the whole episode played,
    in a multi-turn domain)."""
    replies = [reply for _, reply in domain.demonstrations(seed)]
    if not replies:
        return "no demonstration"
    if isinstance(domain, MultiTurnDomain):
        episode = domain.start_episode(seed)
        try:
            for reply in replies:
                episode.step(reply)
            output = episode.transcript()
        finally:
            episode.close()
    else:
        output = replies[-1]
    reward = domain.verify(output, seed).reward
    return None if reward == 1 else f"scores {reward}"
