"""Every link of the product is written by one helper (app.service.inputs.link): its values are encoded, so that a
value with & = + # % or spaces reads back as it was given, and lists, decimals and paths stay readable."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from starlette.datastructures import QueryParams

from app.service.inputs import address_value, link, query_text

AWKWARD = [
    ("overrides", "eagle:0.8:0.1,my source&x=1:0.5:0.2"),
    ("match", 'job="vllm", env=~"a|b"'),
    ("draft_path", "org/a+b c#d%e?f"),
    ("profile", "0.9,0.5"),
]


@pytest.mark.parametrize(("name", "value"), AWKWARD)
def test_a_value_that_needs_encoding_round_trips(name: str, value: str) -> None:
    address = link("/api/v1/draft-sources", [("k_max", 8), (name, value)])
    query = urlsplit(address).query
    assert parse_qsl(query, keep_blank_values=True) == [("k_max", "8"), (name, value)]
    assert dict(QueryParams(query)) == {"k_max": "8", name: value}  # as the API reads it
    assert query.count("&") == 1 and query.count("=") == 2  # the value's own & and = are encoded
    assert not set(" +#?") & set(query)  # as are spaces, + (a space in a query), # and ?


def test_lists_decimals_and_paths_stay_readable() -> None:
    assert query_text(
        {"profile": "0.9,0.5", "p": 0.8, "k": 4, "url": "http://h:8000/metrics", "o": "eagle:0.8:0.1"}
    ) == ("profile=0.9,0.5&p=0.8&k=4&url=http://h:8000/metrics&o=eagle:0.8:0.1")


def test_values_are_written_as_they_read_back() -> None:
    assert [address_value(value) for value in (0.1 + 0.2, 1.0, 4, "a b", None)] == [
        "0.30000000000000004",
        "1.0",
        "4",
        "a b",
        "",
    ]
    assert link("/decide") == "/decide" and link("/decide", {}) == "/decide"
