"""TensorRT-LLM's step times: its iteration statistics, decode-only iterations (``iterLatencyMS`` at
``inflightBatchingStats.numGenRequests`` sequences, each drafting ``specDecodingStats.numDraftTokens /
numRequestsWithDraftTokens`` tokens)."""

from __future__ import annotations

from typing import Any

from app.model.engines import step_times
from app.model.engines.step_times import StepFitError
from app.model.engines.trtllm.versions import NAME


def _detect(payload: Any) -> bool:
    return isinstance(payload, list) and any(isinstance(item, dict) and "iterLatencyMS" in item for item in payload)


def _read(payload: Any) -> list[step_times.StepRow]:
    """Decode-only iterations of TensorRT-LLM's iteration stats: iterLatencyMS at numGenRequests sequences."""
    rows = []
    for number, record in enumerate(payload):
        if not isinstance(record, dict):
            continue
        inflight = record.get("inflightBatchingStats") or {}
        spec = record.get("specDecodingStats") or {}
        if not isinstance(inflight, dict) or not isinstance(spec, dict):
            continue
        try:
            context = float(inflight.get("numContextRequests", 0) or 0)
            batch = float(inflight.get("numGenRequests", 0) or 0)
            ms = float(record["iterLatencyMS"])
            drafted = float(spec.get("numDraftTokens", 0) or 0)
            requests = float(spec.get("numRequestsWithDraftTokens", 0) or 0)
        except (KeyError, TypeError, ValueError):
            raise StepFitError(f"iteration {number}: needs numeric iterLatencyMS and numGenRequests") from None
        if context > 0 or batch < 1:
            continue  # a prefill shares the iteration: not a decoding step
        k = round(drafted / requests) if requests > 0 else 0
        if requests > 0 and (requests != batch or abs(drafted / requests - k) > 1e-9):
            continue  # some sequences drafted and some did not, or drafts of several lengths
        rows.append(step_times.step_row(batch, k + 1, ms, f"iteration {number}", draft_steps=k))
    return rows


STEP_TIMES = (
    step_times.StepTimeFormat(
        "trtllm-iteration-stats",
        NAME,
        "TensorRT-LLM iteration statistics JSON: iterLatencyMS of decode-only iterations",
        _detect,
        _read,
    ),
)
