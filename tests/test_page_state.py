from __future__ import annotations

import pytest

from app.web.pages.page_state import parse_state


def test_defaults() -> None:
    assert parse_state({}) == {"k": 6, "p": 0.75, "c": 0.15, "embed": False}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"k": "4", "p": "0.8", "c": "0.1"}, {"k": 4, "p": 0.8, "c": 0.1}),
        ({"k": "99"}, {"k": 16}),
        ({"p": "-3"}, {"p": 0.0}),
        ({"p": "nan", "c": "inf"}, {"p": 0.75, "c": 0.15}),
        ({"k": "<script>alert(1)</script>"}, {"k": 6}),
        ({"p": "0.8123"}, {"p": 0.81}),
        ({"k": "3.7"}, {"k": 4}),
    ],
)
def test_values_are_parsed_clamped_and_never_raw(query: dict[str, str], expected: dict[str, float]) -> None:
    state = parse_state(query)
    for name, value in expected.items():
        assert state[name] == value
        assert isinstance(state[name], int if name == "k" else float)


def test_embed_flag() -> None:
    assert parse_state({"embed": "1"})["embed"] is True
    assert parse_state({"embed": "0"})["embed"] is False
