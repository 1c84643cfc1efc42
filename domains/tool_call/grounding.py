"""Is a generated task's answer right for its request? A cheap, pure-Python check, so that the simulator's wrong
answers ("Wake me up at 17:56" -> timer.start(minutes=17)) do not become training targets.

Reject reasons, in the order they are checked:
- ungrounded_argument: a value the request does not state: a string not among its words, a number not among its
  numbers (a fragment of a date or time does not count), a date or time it does not name; booleans and a
  parameter's default are always accepted, lists element by element;
- list_of_one: a list of measures (float items) holding one number, for a function of a list (math.mean): it
  returns what it was given, which no request asks for ("What's 3.31 as a decimal?" -> math.mean(numbers=[3.31]));
- format_as_file_name: a file's name (a parameter described as the name of a file) given a file format instead
  ("Compress photo.png as zip" -> archive="zip"; "with arima-zip", "as jpg");
- placeholder_value: a value the request leaves as a template slot ("Mail ... for [recipient_email]" ->
  to="recipient_email"): the slot names what is missing, not a value;
- roles_swapped: paired arguments (from/to, pickup/dropoff, base/target) take each other's role against the request's
  cue words or order (roles.py);
- roles_contradicted: the request cues a paired argument's value in the other role too ("from the office to the
  train station, pick them up at the train station"), and no call takes it there (roles.py);
- value_reused: one value fills more arguments than the request names it (passport_country="Norway",
  destination_country="Norway" for "a passport from Japan, visit Norway"; roles.py);
- value_unused: a number the request states with a unit ("for 10 days", "300ml") that a called function has a
  parameter for (days, ml) is not that parameter's value (left at its default, or another number);
- unit_mismatch: a number the request states only with a unit ("for 2 people") fills a parameter whose name and
  description speak of another (radius_km=2);
- function_mismatch: the request speaks of another offered function and not of the called one, or of the called one
  only by words the other shares while it names a word of the other's own description ("the local time" answered
  with sun times, the clock offered; intent.py);
- enum_not_named: an enum value the request names neither as itself nor by another name ("mi": "miles",
  names.py), unless it is the parameter's default;
- enum_named_unused: an enum value the request names ("the ozone level") that an enum parameter of a called function
  offers, while no enum argument of the calls takes it (pollutant left at its default "pm2.5");
- unit_named_unused: a unit of measure the request names ("How many inches is 25.5 grams in kilograms?") that no unit
  argument of a call with unit parameters takes, though it is not among their values;
- question_as_order: the request asks a question and a called function acts on something ("What's on the shopping
  list for onions?" -> shopping_list.add_items; intent.py);
- function_unrelated: the request is not the kind of request a called function serves, by a sentence encoder
  (relevance.py; only where the domain has one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from genenv.domains.tool_call import intent
from genenv.domains.tool_call.calls import Call
from genenv.domains.tool_call.catalog import CATALOG
from genenv.domains.tool_call.mentions import contains, dates, numbers, times, words
from genenv.domains.tool_call.names import names_of
from genenv.domains.tool_call.relevance import Relevance
from genenv.domains.tool_call.roles import roles_contradicted, roles_swapped, value_reused
from genenv.domains.tool_call.schema import is_number

REJECT_REASONS = (
    "ungrounded_argument",
    "list_of_one",
    "format_as_file_name",
    "placeholder_value",
    "roles_swapped",
    "roles_contradicted",
    "value_reused",
    "value_unused",
    "unit_mismatch",
    "function_mismatch",
    "enum_not_named",
    "enum_named_unused",
    "unit_named_unused",
    "question_as_order",
    "function_unrelated",
)

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
UNIT_PARAMETERS = {
    **dict.fromkeys(("day", "days"), "days"),
    **dict.fromkeys(("night", "nights"), "nights"),
    **dict.fromkeys(("minute", "minutes", "min", "mins"), "minutes"),
    **dict.fromkeys(("hour", "hours"), "hours"),
    **dict.fromkeys(("g", "gram", "grams"), "grams"),
    **dict.fromkeys(("people", "persons"), "people"),
    **dict.fromkeys(("serving", "servings"), "servings"),
    **dict.fromkeys(("percent", "%"), "percent"),
    **dict.fromkeys(("square", "sq"), "square"),
    **dict.fromkeys(("mile", "miles", "mi"), "mile"),
    **dict.fromkeys(("inch", "inches"), "inch"),
    **dict.fromkeys(("foot", "feet", "ft"), "feet"),
    **dict.fromkeys(("ounce", "ounces", "oz"), "ounce"),
    "ml": "ml",
    "km": "km",
    "seats": "seats",
}
"""A unit a request states a number in -> the word a parameter's name holds when it takes that number ("days",
"max_minutes", "radius_km", "tip_percent")."""
UNIT_SYNONYMS = {
    "people": ("people", "person", "passenger", "guest", "party", "seat", "traveler", "traveller", "adult", "serving"),
    "percent": ("percent", "%", "rate", "0 to 100"),
}
"""Other words a parameter's name or description holds when it takes a number of that unit (seats for "3 people",
"Volume from 0 to 100" for "40 percent")."""
_HHMM = re.compile(r"\d{2}:\d{2}")
_NUMBER_AND_WORD = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s*(%|[a-z]+\b))?", re.IGNORECASE)
"""Every number a request states, with the word after it when there is one."""


@dataclass(frozen=True)
class Stated:
    """What the request states, read once per task."""

    words: tuple[str, ...]
    numbers: set[float]
    dates: set[str]
    times: set[str]

    @classmethod
    def of(cls, request: str) -> Stated:
        return cls(words(request), numbers(request), dates(request), times(request))

    def names(self, value: Any) -> bool:
        """The request names `value`, as itself or by another name (names.py)."""
        if is_number(value) and self.has_number(value):
            return True
        return any(contains(self.words, words(name)) for name in names_of(value))

    def has_number(self, value: float) -> bool:
        return any(abs(value - number) < 1e-9 for number in self.numbers)


def answer_error(
    calls: list[Call], functions: list[dict[str, Any]], request: str, relevance: Relevance | None = None
) -> str | None:
    """The reason `calls` is not the right answer to `request`, or None when nothing can tell (the rules first, then
    the sentence encoder of `relevance`, when given)."""
    stated = Stated.of(request)
    arguments = _arguments(calls, functions)
    if not all(_grounded(value, spec, stated) for spec, value in arguments if "enum" not in spec):
        return "ungrounded_argument"
    if any(_list_of_one(spec, value) for spec, value in arguments):
        return "list_of_one"
    if any(_format_as_file_name(spec, value) for spec, value in arguments):
        return "format_as_file_name"
    if _placeholder_value(arguments, request):
        return "placeholder_value"
    if roles_swapped(calls, functions, request):
        return "roles_swapped"
    if roles_contradicted(calls, functions, request):
        return "roles_contradicted"
    if value_reused(calls, request):
        return "value_reused"
    if unit_value_unused(calls, functions, request):
        return "value_unused"
    if unit_mismatch(calls, functions, request):
        return "unit_mismatch"
    if intent.mismatch(calls, functions, request):
        return "function_mismatch"
    if not all(_is_default(value, spec) or stated.names(value) for spec, value in arguments if "enum" in spec):
        return "enum_not_named"
    if enum_named_unused(calls, functions, stated):
        return "enum_named_unused"
    if unit_named_unused(calls, functions, stated):
        return "unit_named_unused"
    if intent.question_as_order(calls, functions, request):
        return "question_as_order"
    if relevance is not None and relevance.unrelated(calls, functions, request):
        return "function_unrelated"
    return None


def _list_of_one(spec: dict[str, Any], value: Any) -> bool:
    """A one-number value of an array-of-measures parameter (items of type float or number: math.mean's numbers); a
    list of integers may be ids, where one is an ordinary request."""
    numeric = spec.get("type") == "array" and spec.get("items", {}).get("type") in ("float", "number")
    return numeric and isinstance(value, list) and len(value) == 1


FILE_FORMATS = frozenset(
    {"zip", "tar", "gz", "tgz", "rar", "7z", "bz2", "xz", "jpg", "jpeg", "png", "gif", "pdf", "csv", "txt", "doc",
     "docx", "xlsx", "pptx", "mp3", "mp4"}
)  # fmt: skip
"""Formats a request names where it means a kind of file ("as zip"), not a file's name."""
_FILE_NAME = re.compile(r"\bname of (the|a|an)\b.*\bfile\b", re.IGNORECASE)
"""How a parameter that takes a file's name describes itself ("Name of the zip file.")."""


def _format_as_file_name(spec: dict[str, Any], value: Any) -> bool:
    """A file-name parameter's value without an extension whose last word is a format: "zip", "arima-zip"."""
    if not (isinstance(value, str) and _FILE_NAME.search(spec.get("description", "")) and "." not in value):
        return False
    named = words(value)
    return bool(named) and named[-1] in FILE_FORMATS


_SLOT = re.compile(r"\{\s*(\w+)\s*\}|[\[<]\s*([A-Za-z]\w*_\w+|[A-Z][A-Z_]*[A-Z])\s*[\]>]")
"""A template slot left in a request: any "{name}", or a snake_case or capitalised name in square or angle brackets
("[recipient_email]", "<NAME>"); "[Groceries]" and "<ann@example.com>" are values."""


def _placeholder_value(arguments: list[tuple[dict[str, Any], Any]], request: str) -> bool:
    """An argument's string value (or list item) is one of the request's unfilled template slots."""
    slots = {found for slot in _SLOT.findall(request) if (found := words("".join(slot)))}
    items = [item for _, value in arguments for item in (value if isinstance(value, list) else [value])]
    return bool(slots) and any(isinstance(item, str) and words(item) in slots for item in items)


def unit_value_unused(calls: list[Call], functions: list[dict[str, Any]], request: str) -> bool:
    """A number stated with a unit that a called function has a parameter for, which no such parameter takes."""
    parameters = {f["name"]: f["parameters"]["properties"] for f in functions}
    for number, unit in _NUMBER_AND_WORD.findall(request):
        word = UNIT_PARAMETERS.get(unit.lower())
        holders = [(call, name) for call in calls for name in parameters[call.name] if word and word in name]
        if holders and not any(_same_number(call.arguments.get(name), float(number)) for call, name in holders):
            return True
    return False


def unit_mismatch(calls: list[Call], functions: list[dict[str, Any]], request: str) -> bool:
    """A numeric argument whose number the request states only with units (every time it states it) of which the
    parameter's name and description hold none, and no other argument of its call names (from_unit="g" carries
    "130 grams"): "2 people" as radius_km, "210 grams" as max_price."""
    parameters = {f["name"]: f["parameters"]["properties"] for f in functions}
    for call in calls:
        named = {n.lower() for v in call.arguments.values() if isinstance(v, str) for n in names_of(v)}
        carried = {UNIT_PARAMETERS[n] for n in named if n in UNIT_PARAMETERS}
        for name, value in call.arguments.items():
            if not is_number(value):
                continue
            about = f"{name} {parameters[call.name][name].get('description', '')}".lower()
            units = _units_of(value, request) - carried
            if units and not any(word in about for unit in units for word in UNIT_SYNONYMS.get(unit, (unit,))):
                return True
    return False


def _units_of(number: float, request: str) -> set[str]:
    """The units (UNIT_PARAMETERS' words) the request states `number` with; nothing when even one of its mentions
    has no unit this knows."""
    units = set()
    for stated, word in _NUMBER_AND_WORD.findall(request):
        if _same_number(float(stated), number):
            unit = UNIT_PARAMETERS.get(word.lower())
            if unit is None:
                return set()
            units.add(unit)
    return units


def enum_named_unused(calls: list[Call], functions: list[dict[str, Any]], stated: Stated) -> bool:
    """A called function's enum parameter offers a value the request names, and no enum argument of the calls takes
    it (given, or the parameter's default where it is left out)."""
    parameters = {f["name"]: f["parameters"]["properties"] for f in functions}
    enums = [(call, name, spec) for call in calls for name, spec in parameters[call.name].items() if "enum" in spec]
    taken = {call.arguments.get(name, spec.get("default")) for call, name, spec in enums}
    return any(value not in taken and stated.names(value) for _, _, spec in enums for value in spec["enum"])


def _takes_units(parameter: str, spec: dict[str, Any]) -> bool:
    return "enum" in spec and parameter.endswith(("_unit", "_scale"))


UNITS = tuple(
    dict.fromkeys(
        str(value).lower()
        for entry in CATALOG.values()
        for parameter, spec in entry.schema["parameters"]["properties"].items()
        if _takes_units(parameter, spec)
        for value in spec["enum"]
    )
)
"""Units of measure a request may name: the values of every unit parameter of the catalog (lengths, weights,
temperature scales)."""


def unit_named_unused(calls: list[Call], functions: list[dict[str, Any]], stated: Stated) -> bool:
    """A call's function takes units (enum parameters named *_unit or *_scale), and the request names a unit of UNITS
    that no unit argument of the calls takes: "inches" in a grams-to-kilograms conversion. Units named by a single
    letter ("g", "m", "°C") are left out: "e.g." and "I'm" name them too."""
    parameters = {f["name"]: f["parameters"]["properties"] for f in functions}
    units = [(call, name) for call in calls for name, spec in parameters[call.name].items() if _takes_units(name, spec)]
    if not units:
        return False
    taken = {str(call.arguments.get(name, parameters[call.name][name].get("default"))).lower() for call, name in units}
    return any(unit not in taken and _names_unit(stated, unit) for unit in UNITS)


def _names_unit(stated: Stated, unit: str) -> bool:
    """The request names `unit` by a name of more than one letter."""
    return any(sum(map(len, name)) > 1 and contains(stated.words, name) for name in map(words, names_of(unit)))


def _same_number(value: Any, number: float) -> bool:
    return is_number(value) and abs(value - number) < 1e-9


def _arguments(calls: list[Call], functions: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    """(parameter schema, value) of every argument; calls are schema-checked before."""
    by_name = {f["name"]: f["parameters"]["properties"] for f in functions}
    return [(by_name[call.name][param], value) for call in calls for param, value in call.arguments.items()]


def _grounded(value: Any, spec: dict[str, Any], stated: Stated) -> bool:
    if isinstance(value, bool) or _is_default(value, spec):
        return True
    if isinstance(value, list):
        return all(_grounded(item, spec.get("items", {}), stated) for item in value)
    if isinstance(value, dict):
        return all(_grounded(item, {}, stated) for item in value.values())
    if isinstance(value, int | float):
        return stated.has_number(value)
    if not isinstance(value, str):
        return False
    if _ISO_DATE.fullmatch(value):
        return value in stated.dates
    if _HHMM.fullmatch(value):
        return value in stated.times
    if any(form in spec.get("description", "") for form in ("YYYY-MM-DD", "HH:MM")):
        return False
    return stated.names(value)


def _is_default(value: Any, spec: dict[str, Any]) -> bool:
    if "default" not in spec or isinstance(value, bool) != isinstance(spec["default"], bool):
        return False
    default = spec["default"]
    if isinstance(value, str) and isinstance(default, str):
        return words(value) == words(default) if words(default) else value.strip() == default
    return value == default
