"""The one Prometheus text reader: samples in order, and a scrape that does not parse refused by its line."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.model.counters import prometheus_text
from app.service.clients.measure import MeasureClientError, parse_metrics

BROKEN = (
    "# HELP vllm:spec_decode_num_drafts Number of spec decoding drafts.\n"
    "# TYPE vllm:spec_decode_num_drafts counter\n"
    'vllm:spec_decode_num_drafts_total{engine="0",model_name="meta-llama 12\n'
)


def test_samples_come_in_order_with_their_labels() -> None:
    text = 'a_total{x="1"} 2\n# a comment\nb 3.5\n'
    assert [(s.name, s.labels, s.value) for s in prometheus_text.samples(text)] == [
        ("a_total", {"x": "1"}, 2.0),
        ("b", {}, 3.5),
    ]


def test_a_broken_line_is_named_by_number_and_quoted_whole() -> None:
    with pytest.raises(prometheus_text.ExpositionError) as caught:
        list(prometheus_text.samples(BROKEN))
    assert caught.value.line_number == 3
    message = str(caught.value)
    assert message.startswith("line 3 does not parse")
    assert '«vllm:spec_decode_num_drafts_total{engine="0",model_name="meta-llama 12»' in message


def test_every_reader_names_the_line(client: TestClient) -> None:
    response = client.post("/api/v1/calibrate", content=BROKEN)
    assert response.status_code == 422
    assert "line 3 does not parse" in response.text
    metrics = client.post("/api/v1/calibrate/metrics", content=BROKEN)
    assert metrics.status_code == 422 and "line 3 does not parse" in metrics.text
    with pytest.raises(MeasureClientError, match="line 3 does not parse"):
        parse_metrics(BROKEN.replace("vllm:", "llamacpp:"))
