"""The series TensorRT-LLM exports of its decoding time, for the canary check (app.model.live.rollout)."""

from __future__ import annotations

from app.model.engines import base
from app.model.engines.trtllm.versions import COLLECTOR

DECODE_TIME = base.DecodeTime(
    seconds="trtllm_time_per_output_token_seconds_sum",
    tokens="trtllm_time_per_output_token_seconds_count",
    per_request=True,
    sources=(COLLECTOR,),
    note="MetricsCollector observes each finished request's time per output token once: sum / count is the mean "
    "over requests of their per-token times, not weighted by their tokens (no per-token series is exported)",
)
