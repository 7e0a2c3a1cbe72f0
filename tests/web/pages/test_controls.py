from __future__ import annotations

import pytest

from app.web.pages.controls import ControlError, changed_from_defaults, read_controls, url_text
from app.web.pages.views.demo import CONTROLS


def test_defaults() -> None:
    reading = read_controls(CONTROLS, {}, strict=False)
    assert reading.values == {"k": 6, "p": 0.75, "c": 0.15, "seed": 0}
    assert reading.notes == []
    assert changed_from_defaults(CONTROLS, reading) == {}


@pytest.mark.parametrize(
    ("query", "expected", "noted"),
    [
        ({"k": "4", "p": "0.8", "c": "0.1"}, {"k": 4, "p": 0.8, "c": 0.1}, False),
        ({"k": "99"}, {"k": 16}, True),
        ({"p": "-3"}, {"p": 0.0}, True),
        ({"p": "nan", "c": "inf"}, {"p": 0.75, "c": 0.15}, True),
        ({"k": "<script>alert(1)</script>"}, {"k": 6}, True),
        ({"p": "0.8123"}, {"p": 0.81}, False),
        ({"k": "3.7"}, {"k": 4}, False),
    ],
)
def test_values_are_parsed_clamped_and_never_raw(
    query: dict[str, str], expected: dict[str, float], noted: bool
) -> None:
    reading = read_controls(CONTROLS, query, strict=False)
    for name, value in expected.items():
        assert reading[name] == value
        assert isinstance(reading[name], int if name == "k" else float)
    assert bool(reading.notes) is noted
    assert all("<script>" not in note for note in reading.notes)


def test_a_clamped_value_says_so_by_its_label() -> None:
    reading = read_controls(CONTROLS, {"k": "20"}, strict=False)
    assert reading.notes == ["Draft length k 20 from the address is out of range; showing 16."]
    assert changed_from_defaults(CONTROLS, reading) == {"k": "16"}


def test_a_huge_whole_number_is_noted_as_written_short() -> None:
    reading = read_controls(CONTROLS, {"k": "1e308"}, strict=False)
    assert reading.notes == ["Draft length k 1e+308 from the address is out of range; showing 16."]
    assert url_text(1e308) == "1e+308" and url_text(2.0**53 - 1) == "9007199254740991" and url_text(64.0) == "64"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"k": "20"}, "Draft length k must be an integer from 0 to 16; got 20"),
        ({"k": "2.5"}, "Draft length k must be an integer from 0 to 16; got 2.5"),
        ({"p": "nan"}, "Acceptance p must be a number from 0 to 1; got 'nan'"),
        ({"c": "abc"}, "Draft cost c must be a number from 0 to 1; got 'abc'"),
    ],
)
def test_the_strict_reading_names_the_label_and_its_bounds(query: dict[str, str], message: str) -> None:
    with pytest.raises(ControlError) as raised:
        read_controls(CONTROLS, query, strict=True)
    assert raised.value.message == message


def test_legacy_keys_are_read_when_the_new_one_is_missing() -> None:
    from app.web.pages.controls import Control

    control = Control(
        "hw", "Accelerator", "select", "h100", options=(("h100", "H100"), ("b200", "B200")), legacy=("rg_hw",)
    )
    assert read_controls([control], {"rg_hw": "b200"}, strict=True)["hw"] == "b200"
    assert read_controls([control], {"rg_hw": "b200", "hw": "h100"}, strict=True)["hw"] == "h100"


def test_whitespace_is_blank_on_a_page_and_refused_by_the_strict_view() -> None:
    from app.web.pages.controls import Control, ControlError

    number = Control("p", "Acceptance p", "range", 0.75, 0.0, 1.0, 0.01)
    assert number.read("", strict=True) == (0.75, None)
    assert number.read("\x0c", strict=False) == (0.75, None)
    with pytest.raises(ControlError, match="Acceptance p must be a number from 0 to 1"):
        number.read("\x0c", strict=True)
    text = Control("label", "Label", "text", None, max_length=10)
    assert text.read("  ", strict=True) == (None, None)
