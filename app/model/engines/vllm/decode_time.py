"""The series vLLM exports of its decoding time, for the canary check (app.model.live.rollout)."""

from __future__ import annotations

from app.model.engines import base
from app.model.engines.vllm.versions import REPOSITORY

STATS_PY = base.Source(
    REPOSITORY,
    "vllm/v1/metrics/stats.py",
    "28ed1fb87ed5686e1d4d0cf4134b8e05d8a25a8a",
    "IterationStats.update_from_output: one inter-token latency per request per engine step after prefill (the "
    "time since its previous tokens, however many the step gave); the first token's time is time to first token",
)

LOGGERS_PY = base.Source(
    REPOSITORY,
    "vllm/v1/metrics/loggers.py",
    "main, 2026",
    "PrometheusStatLogger: histogram vllm:inter_token_latency_seconds observed from inter_token_latencies_iter; "
    "counter vllm:generation_tokens; histogram vllm:time_to_first_token_seconds; labels model_name, engine",
)

DECODE_TIME = base.DecodeTime(
    seconds="vllm:inter_token_latency_seconds_sum",
    tokens="vllm:generation_tokens_total",
    first_tokens="vllm:time_to_first_token_seconds_count",
    sources=(STATS_PY, LOGGERS_PY),
    note="the inter-token latencies' sum over the tokens generated after each request's first: vLLM observes one "
    "latency per step, which with speculation gives several tokens, so the histogram's count is steps and the "
    "tokens come from vllm:generation_tokens_total less one first token per request",
)
