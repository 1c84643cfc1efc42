"""Intervals written as in mathematics, the bounds a config field's metadata gives its number values."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Within:
    """The values a number field may take, written as in mathematics: '[0, 1)', '[1, inf)', '(-inf, 0]'."""

    text: str

    def __post_init__(self) -> None:
        if self.text[0] not in "[(" or self.text[-1] not in "])":
            raise ValueError(f"an interval is written [low, high] with ( or ) for an open end, not {self.text!r}")
        self.ends()

    def ends(self) -> tuple[float, float]:
        low, high = self.text[1:-1].split(",")
        return float(low), float(high)

    def __contains__(self, value: float) -> bool:
        low, high = self.ends()
        above = value > low if self.text[0] == "(" else value >= low
        below = value < high if self.text[-1] == ")" else value <= high
        return above and below

    def __str__(self) -> str:
        """'>= 1' for [1, inf), '<= 0' for (-inf, 0], else 'in [0, 1)'."""
        low, high = self.ends()
        if high == float("inf"):
            return f"{'>' if self.text[0] == '(' else '>='} {self.text[1:].split(',')[0]}"
        if low == float("-inf"):
            return f"{'<' if self.text[-1] == ')' else '<='} {self.text[:-1].split(',')[1].strip()}"
        return f"in {self.text}"
