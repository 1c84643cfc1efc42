"""Does the called function fit what the request asks for? Told cheaply by distinctive keywords, and by whether the
request asks a question where the called function acts (`question_as_order`).

A function's keywords are the words of its name, its description, the names of its enum values ("miles", "ran")
and the requests catalog.py samples for it (argument values left out). A word that speaks for more than
MAX_FUNCTIONS_PER_KEYWORD catalog functions ("what", "set", "convert") speaks for none. Words compare by their
first KEY_LENGTH letters, so "recorded" meets "record".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import cache
from random import Random
from typing import Any

from genenv.domains.tool_call.calls import Call
from genenv.domains.tool_call.catalog import CATALOG
from genenv.domains.tool_call.mentions import NUMBER_WORDS, stem, without_dates_and_times, words
from genenv.domains.tool_call.names import names_of

MAX_FUNCTIONS_PER_KEYWORD = 3
KEY_LENGTH = 6
SAMPLES_PER_FUNCTION = 40
_STOPWORDS_TEXT = """
a an the to of in on at for from by with and or not is are was were be been it its this that these those there here
i im ive me my you your we us our he she they them what whats how when where which who why can could do does did
dont didnt isnt will would should has have had let please just only any some all each other another than then so if
as about after over per plus up out into much many more most also oh too very yet now right today tonight given like
want need get got keep look take come way kind new open
"""
STOPWORDS = frozenset(map(stem, _STOPWORDS_TEXT.split())) | frozenset(NUMBER_WORDS)
"""Words that speak for no function in particular."""


def mismatch(calls: list[Call], functions: list[dict[str, Any]], request: str) -> bool:
    """True when the request speaks for an offered function that is not called, and for a called one not at all, or
    only by keywords the other shares while it names a word of the other's own name or description: "What time is
    the local time in Tallinn?" answered by weather.get_sun_times with clock.time_in offered (both speak for "time",
    only the clock's description for "local"). For the answer `[]` (no function fits), when it speaks for any
    offered function."""
    heard = said(request)
    keys = {f["name"]: keywords(f) for f in functions}
    called = {call.name for call in calls}
    others = [f for f in functions if f["name"] not in called]
    if not any(keys[other["name"]] & heard for other in others):
        return False
    if not called or not all(keys[name] & heard for name in called):
        return True
    return any(
        heard & (_named(other) - keys[name]) and not heard & (keys[name] - keys[other["name"]])
        for name in called
        for other in others
    )


ACTION_VERBS = frozenset(
    {"add", "book", "cancel", "create", "delete", "lock", "log", "order", "play", "put", "record", "remove", "reserve",
     "schedule", "send", "set", "start", "turn"}
)  # fmt: skip
"""The first word of the description of a function that changes something ("Record a workout.", "Add items to the
shopping list."); one that looks something up, converts or computes acts on nothing."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
"""Where one sentence ends and the next begins: not inside "7.5" or "e.g.,"."""
_ASKS_AN_ACTION = re.compile(
    r"^\s*((can|could|may|shall) (i|we)|(would|is) it (be )?possible|is there (any )?way|do you mind|how about"
    r"|why not|why don'?t)\b"
    r"|\b((can|could|would|will) you|please|i'?d like|i would like|i want|i need you)\b",
    re.IGNORECASE,
)
"""A question that is a polite order ("Can you log my run?", "Could I get a ride to the airport?")."""
_ASKS = re.compile(
    r"^(what|how|why|where|when|who|which|whose|is|are|am|was|were|do|does|did|has|have|should)\b",
    re.IGNORECASE,
)
"""How a question that asks something begins; "Add onions to my shopping list?" is an order with a question mark."""


def question_as_order(calls: list[Call], functions: list[dict[str, Any]], request: str) -> bool:
    """The request ends with a question that asks for nothing to be done, and a called function acts: "What's 150
    minutes of yoga doing?" answered by fitness.log_workout, "What's on the shopping list for onions?" by
    shopping_list.add_items. A polite order ("Can you log my run?") asks for the action, and a question the calls
    carry as a value ("... saying: Are you free on Saturday?") is the message, not the request."""
    request = request.replace("’", "'")
    for value in (v for call in calls for v in call.arguments.values() if isinstance(v, str) and v.strip()):
        request = request.replace(value, " ")
    sentences = [s for s in _SENTENCE_END.split(request.strip()) if s]
    if not sentences or not (sentences[-1].endswith("?") and _ASKS.match(sentences[-1])):
        return False
    if any(_ASKS_AN_ACTION.search(s) for s in sentences):
        return False
    by_name = {f["name"]: f for f in functions}
    return any(_acts(by_name[call.name]) for call in calls)


def _acts(function: dict[str, Any]) -> bool:
    first = function.get("description", "").split(maxsplit=1)
    return bool(first) and first[0].lower() in ACTION_VERBS


def said(request: str) -> set[str]:
    """The keyword keys of the request's words (stop words and numbers left out)."""
    return _keys(words(request))


def _named(function: dict[str, Any]) -> frozenset[str]:
    """The keywords of `function` its own name and description give (not the requests sampled for it)."""
    return keywords(function) & _keys(_described(function))


def speaks_only_for(request: str, called: list[dict[str, Any]], offered: list[dict[str, Any]]) -> bool:
    """The request speaks for the `called` functions by a keyword the `offered` ones lack, and for none of the offered
    ones by a keyword the called ones lack: keywords they share (a namespace's "weather") decide nothing."""
    heard = said(request)
    called_keys = frozenset().union(*map(keywords, called))
    offered_keys = frozenset().union(*map(keywords, offered))
    return bool(heard & (called_keys - offered_keys)) and not heard & (offered_keys - called_keys)


def keywords(function: dict[str, Any]) -> frozenset[str]:
    """The distinctive keywords of `function`: the catalog's when it is a catalog function, else from its name and
    description."""
    catalog_keywords, counts = _catalog_index()
    if function["name"] in catalog_keywords:
        return catalog_keywords[function["name"]]
    return _distinctive(_keys(_described(function)), counts)


@cache
def _catalog_index() -> tuple[dict[str, frozenset[str]], Counter[str]]:
    """Keywords of every catalog function, and for each keyword how many functions it speaks for."""
    own = {name: _keys(_described(entry.schema)) | _keys(_request_words(name)) for name, entry in CATALOG.items()}
    counts = Counter(key for keys in own.values() for key in keys)
    return {name: _distinctive(keys, counts) for name, keys in own.items()}, counts


def _distinctive(keys: set[str], counts: Counter[str]) -> frozenset[str]:
    return frozenset(key for key in keys if counts[key] <= MAX_FUNCTIONS_PER_KEYWORD)


def _described(function: dict[str, Any]) -> list[str]:
    """Words of the name, the description and the names of enum values."""
    text = function["name"].replace(".", " ").replace("_", " ") + " " + function.get("description", "")
    enums = [value for spec in function["parameters"]["properties"].values() for value in spec.get("enum", [])]
    return [*words(text), *(w for value in enums for name in names_of(value) for w in words(name))]


def _request_words(name: str) -> list[str]:
    """Words of sampled requests for `name`, without the values of its non-enum arguments, numbers, dates or times."""
    entry, r = CATALOG[name], Random(name)
    properties = entry.schema["parameters"]["properties"]
    found = []
    for _ in range(SAMPLES_PER_FUNCTION):
        question, arguments = entry.make(r)
        values = {w for p, v in arguments.items() if "enum" not in properties[p] for w in _value_words(v)}
        found += [w for w in words(without_dates_and_times(question)) if w not in values and not _has_digit(w)]
    return found


def _value_words(value: Any) -> Iterable[str]:
    if isinstance(value, list):
        return [w for item in value for w in _value_words(item)]
    return words(str(value)) if isinstance(value, str) else ()


def _has_digit(word: str) -> bool:
    return any(ch.isdigit() for ch in word)


def _keys(found: Iterable[str]) -> set[str]:
    return {word[:KEY_LENGTH] for word in found if word not in STOPWORDS and not word.isdigit()}
