"""SGLang's step times: ``scripts/playground/bench_speculative.py`` JSON Lines (keys ``batch_size``,
``steps``, ``topk``, ``num_draft_tokens``, ``step_time`` in seconds), one object or a list of them."""

from __future__ import annotations

from typing import Any

from app.model.engines import step_times
from app.model.engines.sglang.versions import NAME
from app.model.engines.step_times import StepFitError


def _detect(payload: Any) -> bool:
    return (isinstance(payload, dict) and "step_time" in payload) or isinstance(payload, list)


def _read(payload: Any) -> list[step_times.StepRow]:
    records = [payload] if isinstance(payload, dict) else payload
    rows = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise StepFitError(f"line {number}: each line must be a JSON object")
        try:
            batch = float(record["batch_size"])
            steps = int(record.get("steps", 0) or 0)
            topk = int(record.get("topk", 0) or 0)
            draft_tokens = int(record.get("num_draft_tokens", 0) or 0)
            seconds = float(record["step_time"])
        except (KeyError, TypeError, ValueError):
            raise StepFitError(f"line {number}: needs numeric batch_size and step_time (seconds)") from None
        if steps < 0 or topk < 0 or draft_tokens < 0 or steps > 64:
            raise StepFitError(f"line {number}: steps, topk and num_draft_tokens must be at least 0 (steps <= 64)")
        tokens = draft_tokens if steps else 1
        rows.append(step_times.step_row(batch, max(tokens, 1), seconds * 1e3, f"line {number}", steps, max(topk, 1)))
    return rows


STEP_TIMES = (
    step_times.StepTimeFormat(
        "sglang-bench-speculative",
        NAME,
        "SGLang bench_speculative.py JSON Lines: batch_size, steps, topk, num_draft_tokens, step_time (s)",
        _detect,
        _read,
        fallback=True,  # any list of objects: tried after the formats that name a key of their own
    ),
)
