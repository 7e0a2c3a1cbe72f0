"""The one reader of llama.cpp's statistics line (``common/speculative.cpp`` at -lv 4): the log report and
``measure`` read the same totals from it, the last line of each drafter."""

from __future__ import annotations

import pytest

from app.model import engine_metrics
from app.model.engines.llamacpp.statistics import last_statistics
from app.service.clients.measure import draft_time

# as build b11312 prints them (the second line with the fields that came later, between the counts and dur)
LOG = "\n".join(
    [
        "srv  llama_server: listening on http://127.0.0.1:8080",
        "spec common_specu: statistics     draft-simple: #calls(b,g,a) =    1     18     18, #gen drafts =     18, "
        "#acc drafts =    16, #gen tokens =     71, #acc tokens =    45, dur(b,g,a) = 0.001, 343.472, 0.004 ms",
        "spec common_specu: statistics     draft-simple: #calls(b,g,a) =    2     36     36, #gen drafts =     36, "
        "#acc drafts =    32, #gen tokens =    142, #acc tokens =    90, #mean acc len = 3.50, "
        "#acc rate/pos = (0.889, 0.667, 0.556, 0.389), dur(b,g,a) = 0.001, 717.664, 0.010 ms",
        "spec common_specu: statistics     ngram-simple: #calls(b,g,a) =    2     68     32, #gen drafts =     32, "
        "#acc drafts =    20, #gen tokens =    117, #acc tokens =    57, dur(b,g,a) = 0.000, 0.046, 0.013 ms",
    ]
)
OLDER = "statistics draft: #calls = 7, #gen drafts = 7, #acc drafts = 5, #gen tokens = 28, #acc tokens = 17"


def test_the_last_line_of_each_drafter_holds_its_totals() -> None:
    last = last_statistics(LOG)
    assert list(last) == ["draft-simple", "ngram-simple"]
    simple = last["draft-simple"]
    assert (simple.accept_calls, simple.drafts, simple.accepted_drafts) == (36, 36, 32)
    assert (simple.tokens, simple.accepted_tokens, simple.draft_ms) == (142, 90, pytest.approx(717.664))
    older = last_statistics(OLDER)["draft"]
    assert older.accept_calls is None and older.draft_ms is None and older.accepted_tokens == 17
    assert last_statistics(OLDER, timed=True) == {}


def test_the_report_and_measure_read_the_same_totals() -> None:
    _, (measurement,) = engine_metrics.read_measurements(LOG, k=4)
    assert measurement.format == "llamacpp-log"
    assert measurement.draft_tokens == 142 + 117 and measurement.accepted == 90 + 57
    assert measurement.cycles == 36 + 32
    timed = draft_time(LOG)
    assert timed is not None and timed[0] == measurement.draft_tokens


def test_the_draft_time_is_the_last_statistics_line_of_each_drafter() -> None:
    assert draft_time(LOG) == (142 + 117, pytest.approx(717.664 + 0.046))
    assert draft_time("no statistics here") is None
