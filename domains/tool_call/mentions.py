"""What a request states, read cheaply: its words, numbers, dates and times.

Covers the ways catalog.py's samplers (and people) phrase values: "March 14, 2026", "14 March 2026", "2026-03-14",
"5:15 pm", "17:15", "5pm", "two days", "a week". Numbers inside a date or a time are not numbers of their own:
"17:56" states a time, not 17.
"""

from __future__ import annotations

import datetime
import re
from functools import cache

from genenv.domains.tool_call.catalog import MONTHS, YEAR

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "ninety": 90, "hundred": 100, "thousand": 1000, "couple": 2, "pair": 2, "dozen": 12, "week": 7,
    "fortnight": 14, "hour": 60, "single": 1, "once": 1, "twice": 2, "half": 0.5,
}  # fmt: skip
"""Words that state a number ("a week" of forecast days, "an hour" of timer minutes), after stemming."""

_MONTH_NUMBERS = (
    {name.lower(): i for i, name in enumerate(MONTHS, start=1)}
    | {name[:3].lower(): i for i, name in enumerate(MONTHS, start=1)}
    | {"sept": 9}
)
_MONTH = "|".join(sorted(_MONTH_NUMBERS, key=len, reverse=True))
_ORDINAL = r"(?:st|nd|rd|th)?"
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}){_ORDINAL}\b(?:,?\s+(\d{{4}})\b)?", re.IGNORECASE)
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s+(\d{{4}})\b)?", re.IGNORECASE)
_CLOCK = re.compile(r"\b(\d{1,2}):(\d{2})(?!\d)(?:\s*([ap])\.?m\b\.?)?", re.IGNORECASE)
_HOUR = re.compile(r"(?<!:)\b(\d{1,2})\s*([ap])\.?m\b\.?", re.IGNORECASE)
_NAMED_TIMES = {"noon": "12:00", "midday": "12:00", "midnight": "00:00"}
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_GROUPED_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_CONTRACTION = re.compile(r"'(?:s|d|ll|m|re|ve)\b")


def words(text: str) -> tuple[str, ...]:
    """Lower-cased alphanumeric words without possessives and contractions ("FC's" -> "fc", "I'd" -> "i"), other
    apostrophes dropped ("don't" -> "dont"), plurals stemmed ("miles" -> "mile")."""
    text = _CONTRACTION.sub("", text.lower().replace("’", "'")).replace("'", "")
    return tuple(stem(word) for word in _NON_WORD.sub(" ", text).split())


@cache
def stem(word: str) -> str:
    """Drops a plural ending, so "PDFs" names "*.pdf" and "inches" names "inch"."""
    if len(word) <= 3 or not word.endswith("s") or word.endswith("ss"):
        return word
    return word[:-2] if word.endswith(("ches", "shes", "xes")) else word[:-1]


def contains(haystack: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    """True when `needle` occurs as consecutive words of `haystack`."""
    size = len(needle)
    return size > 0 and any(haystack[i : i + size] == needle for i in range(len(haystack) - size + 1))


def dates(text: str) -> set[str]:
    """ISO dates the text states; a date without a year is in catalog.YEAR."""
    found = set()
    for match in _ISO.finditer(text):
        found.add(_iso(int(match[1]), int(match[2]), int(match[3])))
    for match in _MONTH_DAY.finditer(text):
        found.add(_iso(int(match[3] or YEAR), _MONTH_NUMBERS[match[1].lower()], int(match[2])))
    for match in _DAY_MONTH.finditer(text):
        found.add(_iso(int(match[3] or YEAR), _MONTH_NUMBERS[match[2].lower()], int(match[1])))
    return found - {""}


def _iso(year: int, month: int, day: int) -> str:
    """The ISO date, or "" for a day that does not exist."""
    try:
        return datetime.date(year, month, day).isoformat()
    except ValueError:
        return ""


def times(text: str) -> set[str]:
    """24-hour HH:MM times the text states; "5:30" without am/pm may mean 05:30 or 17:30."""
    found = {hhmm for name, hhmm in _NAMED_TIMES.items() if name in words(text)}
    for match in _CLOCK.finditer(text):
        found |= _hours(int(match[1]), int(match[2]), match[3])
    for match in _HOUR.finditer(text):
        found |= _hours(int(match[1]), 0, match[2])
    return found


def _hours(hour: int, minute: int, meridiem: str | None) -> set[str]:
    if minute > 59 or hour > 23 or (meridiem and not 1 <= hour <= 12):
        return set()
    if meridiem:
        hours = {hour % 12 + (12 if meridiem.lower() == "p" else 0)}
    else:
        hours = {hour, hour + 12} if 1 <= hour < 12 else {hour}
    return {f"{h:02d}:{minute:02d}" for h in hours}


def numbers(text: str) -> set[float]:
    """Numbers the text states outside dates and times: digits ("1,250", "-5", "12.5%", "45-minute") or words."""
    masked = without_dates_and_times(text)
    found = {float(NUMBER_WORDS[word]) for word in words(masked) if word in NUMBER_WORDS}
    for match in _GROUPED_NUMBER.finditer(masked):
        found.add(float(match[0].replace(",", "")))
    for match in _NUMBER.finditer(masked):
        found.add(-float(match[0]) if _negative(masked, match.start()) else float(match[0]))
    return found


def without_dates_and_times(text: str) -> str:
    """`text` with every date and time blanked out (same length)."""
    for pattern in (_ISO, _MONTH_DAY, _DAY_MONTH, _CLOCK, _HOUR):
        text = pattern.sub(lambda match: " " * len(match[0]), text)
    return text


def _negative(text: str, start: int) -> bool:
    """A minus sign right before the digits and not a hyphen inside a word ("SKU-1234")."""
    if text[max(0, start - 6) : start].lower().endswith("minus "):
        return True
    return start > 0 and text[start - 1] == "-" and (start == 1 or not text[start - 2].isalnum())
