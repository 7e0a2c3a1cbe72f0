"""The one counts record and its writer: what is written reads back through the product's exposition reader."""

from __future__ import annotations

import pytest

from app.model.counters import prometheus_text
from app.model.counters.counts import CounterNames, SpecCounts, counter_families


def test_counter_families_read_back_by_series_and_position() -> None:
    names = CounterNames.spec_decode("toy:")
    rows = [
        ((("model_name", "a"),), SpecCounts(10, 40, 25, (9, 7, 5, 4))),
        ((("model_name", "b"),), SpecCounts(2, 8, 1, (1, 0))),
    ]
    text = prometheus_text.exposition(counter_families(names, rows))
    read = {
        (s.name, s.labels.get("model_name"), s.labels.get("position")): s.value for s in prometheus_text.samples(text)
    }
    assert read[("toy:spec_decode_num_drafts_total", "a", None)] == 10
    assert read[("toy:spec_decode_num_draft_tokens_total", "b", None)] == 8
    assert read[("toy:spec_decode_num_accepted_tokens_total", "a", None)] == 25
    assert read[("toy:spec_decode_num_accepted_tokens_per_pos_total", "a", "3")] == 4
    assert read[("toy:spec_decode_num_accepted_tokens_per_pos_total", "b", "1")] == 0
    assert ("toy:spec_decode_num_accepted_tokens_per_pos_total", "b", "2") not in read


def test_a_count_without_a_name_is_not_written_and_the_position_label_is_the_engines() -> None:
    names = CounterNames(drafts="x_verify_total", per_position="x_hits_total", position_label="pos")
    text = prometheus_text.exposition(counter_families(names, [((), SpecCounts(3, 12, 5, (3, 2)))]))
    read = [(s.name, s.labels, s.value) for s in prometheus_text.samples(text)]
    assert read == [
        ("x_verify_total", {}, 3.0),
        ("x_hits_total", {"pos": "0"}, 3.0),
        ("x_hits_total", {"pos": "1"}, 2.0),
    ]


def test_counts_since_a_baseline_and_a_restart() -> None:
    before, after = SpecCounts(10, 40, 20, (8, 6)), SpecCounts(15, 60, 29, (12, 9, 1))
    assert after.minus(before) == SpecCounts(5, 20, 9, (4, 3, 1))
    assert before.plus(after.minus(before)) == SpecCounts(15, 60, 29, (12, 9, 1))
    with pytest.raises(ValueError, match="went down"):
        before.minus(after)
