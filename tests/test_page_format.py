from __future__ import annotations

import pytest

from app.web.pages.page_format import js_fixed, js_string


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [(1.125, 2, "1.13"), (0.125, 2, "0.13"), (2.675, 2, "2.67"), (-1.005, 2, "-1.00"), (3.0, 0, "3"), (0.0, 2, "0.00")],
)
def test_js_fixed_rounds_exact_ties_away_from_zero_like_to_fixed(value: float, digits: int, text: str) -> None:
    assert js_fixed(value, digits) == text


def test_python_would_disagree_on_a_tie() -> None:
    assert f"{1.125:.2f}" == "1.12"  # why the page does not use %-formatting for first paint


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (123456.0, "123456"),
        (1.5e-5, "0.000015"),
        (float("inf"), "Infinity"),
    ],
)
def test_js_string_matches_number_to_string(value: float, text: str) -> None:
    assert js_string(value) == text
