"""The OpenAI-compatible stream as measure times it (app/model/engines/streaming.py), and vLLM's live counters
(app/model/engines/vllm/reports.py); both are also read from the real vLLM in tests/test_measure_vllm_live.py."""

from __future__ import annotations

import json

import pytest

from app.model.engines import streaming
from app.model.engines.live import LiveReadError
from app.model.engines.vllm import reports as vllm_reports


def _chunk(text: str, usage: dict[str, int] | None = None) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "text": text}], "usage": usage})


def test_the_decoding_phase_runs_from_the_first_token_to_the_last_and_usage_counts_the_tokens() -> None:
    events = [
        (1.0, _chunk(" The")),
        (1.5, _chunk(" quick brown")),  # speculation: several tokens in one chunk
        (2.0, _chunk(" fox")),
        (2.0, "data: " + json.dumps({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5}})),
        (2.0, "data: [DONE]"),
    ]
    timings = streaming.stream_timings(events, sent=0.5)
    assert (timings.predicted_n, timings.prompt_n) == (5, 7)
    assert timings.predicted_ms == pytest.approx(1000.0) and timings.total_ms == pytest.approx(1500.0)
    assert timings.draft_n is None


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([(1.0, _chunk(" a")), (1.0, "data: [DONE]")], "without usage.completion_tokens"),
        ([(1.0, "data: {not json")], "not JSON"),
        ([(1.0, 'data: {"error": {"message": "model not found"}}')], "model not found"),
        ([(1.0, _chunk("", {"prompt_tokens": 1, "completion_tokens": 0}))], "no text"),
    ],
)
def test_a_stream_that_is_not_a_completion_says_why(events: list[tuple[float, str]], message: str) -> None:
    with pytest.raises(streaming.StreamReadError, match=message):
        streaming.stream_timings(events, sent=0.0)


def test_vllm_counters_sum_over_engines_and_count_positions() -> None:
    scrape = "\n".join(
        [
            'vllm:num_requests_running{engine="0",model_name="m"} 0.0',
            *(
                f'vllm:spec_decode_num_{name}_total{{engine="{engine}",model_name="m"}} {value}'
                for engine in (0, 1)
                for name, value in (("drafts", 3.0), ("draft_tokens", 12.0), ("accepted_tokens", 5.0))
            ),
            *(
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{i}"}} {v}'
                for i, v in enumerate((2.0, 2.0, 1.0, 0.0))
            ),
        ]
    )
    counts = vllm_reports.spec_counts(scrape)
    assert counts is not None
    assert (counts.drafts, counts.draft_tokens, counts.accepted, counts.per_position) == (6, 24, 10, (2, 2, 1, 0))
    assert vllm_reports.spec_counts('vllm:num_requests_running{engine="0"} 0') is None  # no speculation
    with pytest.raises(LiveReadError, match="no vllm"):
        vllm_reports.spec_counts("llamacpp:requests_processing 0")
