from __future__ import annotations

import pytest

from app.web.pages.page_format import js_fixed, js_number, js_string


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


def test_js_number_takes_number_syntax() -> None:
    assert js_number("0x10") == 16 and js_number("0b101") == 5 and js_number("0o17") == 15
    assert js_number("\u00a0 .5e1 \n") == 5.0 and js_number("-Infinity") == float("-inf")
    for text in ("1_000", "inf", "nan", "-0x10", "1.2.3", "\u0663", "\x1c1"):
        assert js_number(text) != js_number(text), text  # NaN
    assert js_string(1.0) == "1" and js_string(-0.0) == "0" and js_string(0.35) == "0.35"
