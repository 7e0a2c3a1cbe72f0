"""The series SGLang exports of its decoding time, for the canary check (app.model.live.rollout)."""

from __future__ import annotations

from app.model.engines import base
from app.model.engines.sglang.versions import METRICS

DECODE_TIME = base.DecodeTime(
    seconds="sglang:inter_token_latency_seconds_sum",
    tokens="sglang:inter_token_latency_seconds_count",
    sources=(METRICS,),
    note="TokenizerMetricsCollector.observe_inter_token_latency adds each interval to the histogram's sum and the "
    "tokens it gave to its buckets, so the histogram's count is tokens and sum / count the per-token time",
)
