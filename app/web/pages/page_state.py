"""The demo's state as it travels in the URL: parsed, validated, never echoed raw."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Control:
    name: str
    default: float
    low: float
    high: float
    step: float
    integer: bool = False

    def parse(self, raw: str | None) -> float:
        """The value from the URL, or the default when missing or malformed; clamped to range."""
        if raw is None:
            return self.default
        try:
            value = float(raw)
        except ValueError:
            return self.default
        if not math.isfinite(value):
            return self.default
        value = min(max(value, self.low), self.high)
        if self.integer:
            return float(round(value))
        return round(round(value / self.step) * self.step, 10)


DEMO_CONTROLS = (
    Control("k", 6, 0, 16, 1, integer=True),
    Control("p", 0.75, 0.0, 1.0, 0.01),
    Control("c", 0.15, 0.0, 1.0, 0.01),
)


def parse_state(query: Mapping[str, str]) -> dict[str, float | int | bool]:
    """Validated page state from query parameters; unknown keys are ignored."""
    state: dict[str, float | int | bool] = {}
    for control in DEMO_CONTROLS:
        value = control.parse(query.get(control.name))
        state[control.name] = int(value) if control.integer else value
    state["embed"] = query.get("embed") in ("1", "true", "yes")
    return state
