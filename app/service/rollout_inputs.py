"""The inputs of the canary check (app.service.clients.rollout), declared once for the API and the command line.

What a value means (a matcher list, a duration, an interval LOW,HIGH) the model checks (app.model.rollout) and
says why; these state what is taken, its length and its default.
"""

from __future__ import annotations

from app.model import rollout
from app.service.inputs import Input

MAX_URL = 2048
MAX_DURATION = 32
MAX_INTERVAL_TEXT = 64

PROMETHEUS = Input(
    "prometheus",
    "Prometheus",
    str,
    None,
    "The Prometheus root URL",
    max_length=MAX_URL,
    min_length=1,
    required=True,
)
CANARY = Input(
    "canary",
    "Canary",
    str,
    None,
    "Label matchers",
    max_length=rollout.MAX_MATCHER_CHARS,
    min_length=1,
    required=True,
)
CONTROL = Input(
    "control",
    "Control",
    str,
    None,
    "Label matchers",
    max_length=rollout.MAX_MATCHER_CHARS,
    min_length=1,
    required=True,
)
WINDOW = Input(
    "window",
    "Window",
    str,
    "30m",
    "A duration such as 30s, 5m or 1h",
    max_length=MAX_DURATION,
    min_length=1,
)
INTERVAL = Input(
    "interval",
    "Interval",
    str,
    "1m",
    "A duration such as 30s, 5m or 1h",
    max_length=MAX_DURATION,
    min_length=1,
)
CALIBRATED = Input(
    "calibrated", "Calibrated interval", str, None, "LOW,HIGH: the calibrated interval", max_length=MAX_INTERVAL_TEXT
)
CHECK: tuple[Input, ...] = (PROMETHEUS, CANARY, CONTROL, WINDOW, INTERVAL, CALIBRATED)
