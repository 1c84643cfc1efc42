"""Writes data/seeds.jsonl, the shipped tool_call seed set, deterministically from catalog.py.

Run `python -m domains.tool_call.make_seeds` after editing the catalog, and commit both files.
Mix: three single-function seeds per function, seeds offering 2-3 related functions (the right one plus
distractors), a few parallel seeds that need two calls, and about ABSTENTION_SHARE abstention seeds: a request for
one function offered with functions of an unrelated group, answered `[]` (BFCL's irrelevance category).

Then the held-out families (those `is_heldout` picks at the default `heldout_fraction`, which no model trains on) get
HELDOUT_EXTENSION_PER_FAMILY more seeds each, from their own random stream, so the held-out measure is large enough to
steer by (76 seeds made one item 1.3 points) and the seeds before them stay as they were: requests for the family's
functions, and about ABSTENTION_SHARE of them requests its functions cannot serve (`ToolCallDomain.abstention_task`).
The catalog's samplers write each request with its call, so every one is correct by construction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any

from genenv.config import GenEnvConfig
from genenv.curriculum.pools import is_heldout
from genenv.domains.base import TaskInstance
from genenv.domains.tool_call.calls import Call, canonical_calls, format_calls, parse_calls
from genenv.domains.tool_call.catalog import CATALOG
from genenv.domains.tool_call.domain import ToolCallDomain, family_of, normalise_question

SEEDS_PATH = Path(__file__).parent / "data" / "seeds.jsonl"
RANDOM_SEED = 20251219
SINGLES_PER_FUNCTION = 3
SEEDS_PER_GROUP = 3
CONNECTORS = ("Also, ", "And ", "Oh, and ")
ABSTENTION_SHARE = 0.1
HELDOUT_EXTENSION_PER_FAMILY = 10
SAMPLES_PER_NEW_SEED = 100

GROUPS = [
    ("weather.get_forecast", "weather.get_air_quality"),
    ("weather.get_sun_times", "clock.time_in"),
    ("calendar.create_event", "calendar.list_events", "calendar.delete_event"),
    ("timer.start", "alarm.set"),
    ("reminders.add", "calendar.create_event"),
    ("units.convert_length", "units.convert_weight", "units.convert_temperature"),
    ("finance.get_exchange_rate", "finance.stock_quote"),
    ("finance.loan_payment", "math.percent_of"),
    ("finance.split_bill", "budget.add_expense"),
    ("travel.search_flights", "travel.find_hotels"),
    ("travel.visa_rules", "language.translate"),
    ("transit.next_departures", "maps.directions", "rides.request_ride"),
    ("places.search_nearby", "restaurants.reserve"),
    ("recipes.search", "recipes.scale", "nutrition.lookup"),
    ("mail.compose", "mail.search_inbox", "chat.send_text"),
    ("shop.search_products", "shop.add_to_cart", "shop.track_order"),
    ("shopping_list.add_items", "recipes.search"),
    ("math.mean", "math.round_number"),
    ("math.is_prime", "math.to_base"),
    ("files.make_folder", "files.find", "files.compress"),
    ("music.play", "music.set_volume", "music.new_playlist"),
    ("fitness.log_workout", "fitness.calories_burned"),
    ("health.log_water", "health.log_sleep"),
    ("home.set_thermostat", "home.switch_lights", "home.lock"),
    ("dictionary.define", "language.translate"),
    ("news.headlines", "sports.fixtures"),
    ("cinema.showtimes", "books.by_author"),
]
PARALLEL_SAME = [
    "weather.get_forecast",
    "units.convert_length",
    "finance.stock_quote",
    "math.is_prime",
    "clock.time_in",
    "finance.get_exchange_rate",
    "dictionary.define",
    "travel.visa_rules",
    "shop.track_order",
    "cinema.showtimes",
]
PARALLEL_PAIRS = [  # (offered group, first call, second call)
    (GROUPS[23], "home.switch_lights", "home.lock"),
    (GROUPS[3], "timer.start", "alarm.set"),
    (GROUPS[14], "mail.compose", "chat.send_text"),
    (GROUPS[1], "weather.get_sun_times", "clock.time_in"),
]

ABSTENTIONS = [  # (offered group, group the request comes from): no offered function serves the request
    (0, 13), (1, 25), (2, 15), (3, 16), (4, 17), (5, 20), (6, 19), (7, 23), (8, 26), (9, 20), (10, 18), (11, 24),
    (12, 25), (13, 0), (14, 1), (15, 2), (16, 3), (17, 4), (18, 21), (19, 6), (20, 7), (21, 10), (22, 15), (23, 11),
    (24, 12), (25, 19), (26, 22),
]  # fmt: skip

Sample = Callable[[Random], tuple[str, list[Call]]]


def single(name: str) -> Sample:
    def sample(r: Random) -> tuple[str, list[Call]]:
        question, arguments = CATALOG[name].make(r)
        return question, [Call(name, arguments)]

    return sample


def pair(first: str, second: str) -> Sample:
    """Two requests joined into one message; the answer makes both calls."""

    def sample(r: Random) -> tuple[str, list[Call]]:
        (q1, [c1]), (q2, [c2]) = single(first)(r), single(second)(r)
        if c1 == c2:
            return sample(r)
        lead = q2 if q2.startswith(("I ", "I'")) else q2[0].lower() + q2[1:]
        return f"{q1} {r.choice(CONNECTORS)}{lead}", [c1, c2]

    return sample


def abstain(names: tuple[str, ...]) -> Sample:
    """A request for one of `names`, to be offered with functions that cannot serve it: the answer is no call."""

    def sample(r: Random) -> tuple[str, list[Call]]:
        question, _ = single(r.choice(names))(r)
        return question, []

    return sample


def abstentions(r: Random, count: int) -> list[tuple[tuple[str, ...], Sample]]:
    """`count` abstention seeds cycling through ABSTENTIONS, offering the whole group or, every other time, one of
    its functions (as BFCL's irrelevance items do)."""
    plan = []
    for i in range(count):
        offered, source = ABSTENTIONS[i % len(ABSTENTIONS)]
        group = GROUPS[offered] if i % 2 == 0 else (r.choice(GROUPS[offered]),)
        plan.append((group, abstain(GROUPS[source])))
    return plan


def build_seeds(random_seed: int = RANDOM_SEED) -> list[dict[str, Any]]:
    """Every row is unique by normalised question and canonical answer."""
    r = Random(random_seed)
    plan: list[tuple[tuple[str, ...], Sample]] = []
    for name in CATALOG:
        plan += [((name,), single(name))] * SINGLES_PER_FUNCTION
    for group in GROUPS:
        start = r.randrange(len(group))
        plan += [(group, single(group[(start + i) % len(group)])) for i in range(SEEDS_PER_GROUP)]
    plan += [((name,), pair(name, name)) for name in PARALLEL_SAME]
    plan += [(group, pair(first, second)) for group, first, second in PARALLEL_PAIRS]
    plan += abstentions(r, round(len(plan) * ABSTENTION_SHARE / (1 - ABSTENTION_SHARE)))

    rows, seen = [], set()
    for offered, sample in plan:
        question, calls = sample(r)
        while (key := normalise_question(question) + "||" + canonical_calls(calls)) in seen:
            question, calls = sample(r)
        seen.add(key)
        functions = [CATALOG[name].schema for name in r.sample(offered, len(offered))]
        rows.append({"functions": functions, "question": question, "answer": format_calls(calls)})
    r.shuffle(rows)
    rows += heldout_extension(rows, Random(random_seed + 1))
    return [{"seed_id": f"tc-{i:04d}", **row} for i, row in enumerate(rows, start=1)]


def heldout_extension(rows: list[dict[str, Any]], r: Random) -> list[dict[str, Any]]:
    """HELDOUT_EXTENSION_PER_FAMILY new seeds for each held-out family of `rows` (fewer where a function has few
    phrasings), unique against them and each other and with no answer any of them gives (so no training seed turns
    into a held-out overlap): calls of the family's functions in turn, and every tenth an abstention."""
    domain = ToolCallDomain()
    seen = {normalise_question(row["question"]) + "||" + canonical_calls(parse_calls(row["answer"])) for row in rows}
    answers = {canonical_calls(parse_calls(row["answer"])) for row in rows}  # a seed must not teach a held-out answer
    families: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        family = family_of(row["functions"])
        if is_heldout(family, GenEnvConfig.heldout_fraction):
            families.setdefault(family, row["functions"])
    added = []
    abstain_every = round(1 / ABSTENTION_SHARE)
    for _, functions in sorted(families.items()):
        names = [f["name"] for f in functions]
        for i in range(HELDOUT_EXTENSION_PER_FAMILY):
            for _ in range(SAMPLES_PER_NEW_SEED):  # a function with few phrasings ("lock the door") runs out
                if i % abstain_every == abstain_every - 1:
                    question, calls = _abstention(domain, functions, r)
                else:
                    question, calls = single(names[i % len(names)])(r)
                key = normalise_question(question) + "||" + canonical_calls(calls)
                if key not in seen and (not calls or canonical_calls(calls) not in answers):
                    seen.add(key)
                    added.append({"functions": functions, "question": question, "answer": format_calls(calls)})
                    break
    return added


def _abstention(domain: ToolCallDomain, functions: list[dict[str, Any]], r: Random) -> tuple[str, list[Call]]:
    """A catalog request that none of `functions` can serve."""
    offered = TaskInstance("offered", {"functions": functions, "question": ""}, "[]")
    while True:
        question, calls = single(r.choice(sorted(CATALOG)))(r)
        request = TaskInstance("request", {"functions": [], "question": question}, format_calls(calls))
        if domain.abstention_task(offered, request, "built") is not None:
            return question, []


def write_seeds(path: Path = SEEDS_PATH) -> int:
    rows = build_seeds()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return len(rows)


if __name__ == "__main__":
    print(f"wrote {write_seeds()} seeds to {SEEDS_PATH}")
