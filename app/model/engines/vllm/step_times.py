"""vLLM's step times: the JSON its dynamic speculation config generator writes
(``vllm/v1/spec_decode/dynamic/generate_config.py``: ``batch_stats`` maps batch size to {k: median inter-token
latency in ms}, k = 0 without speculation), each entry the time of one step (k = 0) or cycle (k > 0)."""

from __future__ import annotations

from typing import Any

from app.model.engines import step_times
from app.model.engines.step_times import StepFitError
from app.model.engines.vllm.versions import NAME


def _detect(payload: Any) -> bool:
    return isinstance(payload, dict) and "batch_stats" in payload


def _read(payload: Any) -> list[step_times.StepRow]:
    stats = payload.get("batch_stats")
    if not isinstance(stats, dict) or not stats:
        raise StepFitError("vLLM dynamic speculation config: batch_stats must map batch size to {k: ms}")
    rows = []
    for batch_key, by_k in stats.items():
        if not isinstance(by_k, dict):
            raise StepFitError(f"batch_stats[{batch_key!r}] must map k to milliseconds")
        for k_key, ms in by_k.items():
            where = f"batch_stats[{batch_key!r}][{k_key!r}]"
            try:
                batch, k = float(batch_key), float(k_key)
            except ValueError:
                raise StepFitError(f"{where}: batch and k must be numbers") from None
            if not isinstance(ms, int | float) or isinstance(ms, bool):
                raise StepFitError(f"{where}: the latency must be a number")
            if not (0 <= k <= 64 and k.is_integer()):
                raise StepFitError(f"{where}: k must be a whole number from 0 to 64")
            rows.append(step_times.step_row(batch, int(k) + 1, float(ms), where, draft_steps=int(k)))
    return rows


STEP_TIMES = (
    step_times.StepTimeFormat(
        "vllm-dynamic-config",
        NAME,
        "vLLM dynamic speculation config generator JSON: batch_stats (batch -> {k: ms})",
        _detect,
        _read,
    ),
)
