from __future__ import annotations

import pytest

from app.web.pages.text import fixed, times


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [
        (1.125, 2, "1.13"),  # the exact binary value is a tie: rounded away from zero, as toFixed does
        (0.125, 2, "0.13"),
        (2.675, 2, "2.67"),  # just below the tie in binary
        (-1.005, 2, "-1.00"),
        (3.0, 0, "3"),
        (0.0, 2, "0.00"),
        (-0.0, 2, "0.00"),
        (80.0, 2, "80.00"),
        (3.35, 2, "3.35"),
        (1e-6, 2, "0.00"),
        (-0.001, 2, "-0.00"),
        (1.2345678901234568e20, 2, "123456789012345683968.00"),
    ],
)
def test_fixed_writes_as_to_fixed_does(value: float, digits: int, text: str) -> None:
    assert fixed(value, digits) == text


def test_python_would_disagree_on_a_tie() -> None:
    assert f"{1.125:.2f}" == "1.12"  # why the pages do not use %-formatting


def test_times() -> None:
    assert times(1.824244449013158) == "1.82×"
    assert fixed(float("inf"), 2) == "∞"
