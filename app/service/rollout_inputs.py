"""The inputs of the canary check (app.service.clients.rollout), declared once for the API and the command line.

What a value means (a matcher list, a duration, an interval LOW,HIGH) the model checks (app.model.live.rollout) and
says why; these state what is taken, its length and its default.
"""

from __future__ import annotations

from app.model.live import rollout
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


def _matchers(name: str, label: str) -> Input:
    """Label matchers that select one group of replicas (the model checks their syntax and says why)."""
    return Input(
        name, label, str, None, "Label matchers", max_length=rollout.MAX_MATCHER_CHARS, min_length=1, required=True
    )


CANARY = _matchers("canary", "Canary")
CONTROL = _matchers("control", "Control")


def _duration(name: str, label: str, default: str) -> Input:
    """A duration as text, 30s, 5m or 1h (the model checks it against its own bounds and says why)."""
    return Input(name, label, str, default, "A duration such as 30s, 5m or 1h", max_length=MAX_DURATION, min_length=1)


WINDOW = _duration("window", "Window", "30m")
# The rollout plan (command line, over Prometheus) reads a longer stretch: it measures each class's acceptance and
# the batches it ran over its traffic, a class that is quiet for a while included, where the check compares two
# live groups side by side over recent intervals.
PLAN_WINDOW = _duration("window", "Window", "1h")
INTERVAL = _duration("interval", "Interval", "1m")
CALIBRATED = Input(
    "calibrated", "Calibrated interval", str, None, "LOW,HIGH: the calibrated interval", max_length=MAX_INTERVAL_TEXT
)
CHECK: tuple[Input, ...] = (PROMETHEUS, CANARY, CONTROL, WINDOW, INTERVAL, CALIBRATED)
