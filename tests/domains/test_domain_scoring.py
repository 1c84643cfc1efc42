"""Soft R_agent (Eq. 1, unstructured case): SQuAD normalisation and token F1."""

from __future__ import annotations

import pytest

from genenv.domains.scoring import normalize_answer, token_f1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The  Eiffel Tower!", "eiffel tower"),
        ("An apple, a day.", "apple day"),
        ("  James   MADISON ", "james madison"),
        ("the", ""),
        ("Theatre", "theatre"),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        ("James Madison", "james madison", 1.0),
        ("President James Madison", "James Madison", 0.8),
        ("Madison", "James Madison", 2 / 3),
        ("Titan IIIE rocket", "Titan IIIE", 0.8),
        ("1999", "2001", 0.0),
        ("the", "", 1.0),
        ("", "1999", 0.0),
        ("a b b", "b b c", 0.8),
        ("x b b", "b b c", 2 / 3),
    ],
)
def test_token_f1(prediction: str, reference: str, expected: float) -> None:
    assert token_f1(prediction, reference) == pytest.approx(expected, abs=1e-12)
