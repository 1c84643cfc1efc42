"""How a request names a value: "miles" for "mi", "PDFs" for "*.pdf", "binary" for base 2, "ran" for "running".

Built from catalog.py's maps (the ways the seed samplers phrase values) plus the common names below.
"""

from __future__ import annotations

from typing import Any

from genenv.domains.tool_call.catalog import BASE_NAMES, FILE_KINDS, LENGTH_UNITS, TRAVEL_VERBS, WEIGHT_UNITS

SYNONYMS: dict[str, tuple[str, ...]] = {
    "ft": ("foot",),
    "kg": ("kilo",),
    "lb": ("lbs",),
    "16": ("hex",),
    "running": ("run", "ran", "jog", "jogging"),
    "cycling": ("bike", "biking", "cycled", "rode"),
    "swimming": ("swim", "swam"),
    "walking": ("walked", "hike", "hiking"),
    "celsius": ("centigrade", "°C"),
    "fahrenheit": ("°F",),
    "USD": ("dollar", "US dollar"),
    "EUR": ("euro",),
    "GBP": ("pound sterling", "British pound"),
    "JPY": ("yen",),
    "CAD": ("Canadian dollar",),
    "AUD": ("Australian dollar",),
    "CHF": ("Swiss franc",),
    "INR": ("rupee",),
    "MXN": ("peso",),
    "SEK": ("krona", "kronor"),
}
"""Names people use for values, beyond catalog.py's maps."""
NOT_NAMES = {"in"}
"""Values that name nothing by themselves ("in" for inches is in every sentence)."""


def _other_names() -> dict[str, frozenset[str]]:
    pairs = [*LENGTH_UNITS.items(), *WEIGHT_UNITS.items(), *FILE_KINDS.items(), *TRAVEL_VERBS.items()]
    pairs += [(str(base), word) for base, word in BASE_NAMES.items()]
    pairs += [(value, synonym) for value, synonyms in SYNONYMS.items() for synonym in synonyms]
    found: dict[str, set[str]] = {}
    for value, name in pairs:
        found.setdefault(value.lower(), set()).update({name, name.replace("meter", "metre")})
    return {value: frozenset(names) for value, names in found.items()}


_OTHER_NAMES = _other_names()


def names_of(value: Any) -> frozenset[str]:
    """Every way a request may name `value`, the value itself included unless it is in NOT_NAMES."""
    key = str(value)
    return _OTHER_NAMES.get(key.lower(), frozenset()) | (frozenset({key}) - NOT_NAMES)
