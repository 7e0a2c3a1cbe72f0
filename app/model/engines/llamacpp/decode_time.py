"""The series llama-server exports of its decoding time, for the canary check (app.model.live.rollout)."""

from __future__ import annotations

from app.model.engines import base
from app.model.engines.llamacpp.versions import B11312, REPOSITORY

SERVER_TASK_METRICS = base.Source(
    REPOSITORY,
    "tools/server/server-task.cpp",
    B11312,
    "/metrics counters tokens_predicted_total (metrics.predict.count) and tokens_predicted_seconds_total "
    "(metrics.predict.time / 1e6), prefixed llamacpp:",
)

DECODE_TIME = base.DecodeTime(
    seconds="llamacpp:tokens_predicted_seconds_total",
    tokens="llamacpp:tokens_predicted_total",
    sources=(SERVER_TASK_METRICS,),
    note="seconds spent generating over tokens generated, added when each request finishes: an interval counts "
    "the requests that finished in it",
)
