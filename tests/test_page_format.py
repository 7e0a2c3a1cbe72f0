from __future__ import annotations

import math

import pytest

from app.web.pages.page_format import js_exponential, js_fixed, js_number, js_string


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


def test_js_number_text_matches_javascript() -> None:
    # String(x), x.toFixed(n) and x.toExponential(n) as a browser writes them.
    assert [js_string(x) for x in (0.15, 3.0, -0.0, 1e21, 1e-7, 123456.5, 0.000001, 2.5e-6)] == [
        "0.15",
        "3",
        "0",
        "1e+21",
        "1e-7",
        "123456.5",
        "0.000001",
        "0.0000025",
    ]
    # Exact binary ties round away from zero (Python's % rounds them to even).
    assert [js_fixed(x, 2) for x in (1.625, 0.125, 2.675, 1.0, -0.0)] == ["1.63", "0.13", "2.67", "1.00", "0.00"]
    assert js_fixed(3.14159, 0) == "3"
    assert [js_exponential(x, 1) for x in (1.234e-5, 9.96e-7, 5e-10)] == ["1.2e-5", "1.0e-6", "5.0e-10"]


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.5", 0.5), (" 5 ", 5.0), ("1e1", 10.0), (".5", 0.5), ("5.", 5.0), ("0x10", 16.0), ("+2", 2.0), ("", 0.0)],
)
def test_js_number_reads_what_number_reads(text: str, value: float) -> None:
    assert js_number(text) == value


@pytest.mark.parametrize("text", ["1_0", "abc", "inf", "nan", "-0x10", "0x", "1e", "Infinity", "1e400", "5 5"])
def test_js_number_rejects_what_number_rejects(text: str) -> None:
    assert not math.isfinite(js_number(text))
