"""Parameters written as text (lists of numbers, edits) and the regime named in a query: their length cap and the
pattern their schema declares; shared by the calibrate, sources and trees routers."""

from __future__ import annotations

import re

from app.model.cost.regimes import REGIME_NAMES, RegimeName
from app.service import decision_inputs as inputs
from app.service.decision import CostRegime, cost_regime
from app.web.core.errors import parameter_error


def check_format(name: str, text: str, pattern: str, example: str) -> None:
    """The catch-all behind the detailed checks: the value matches the pattern its schema declares."""
    if not re.fullmatch(pattern, text):
        raise parameter_error(name, f"must match the pattern {pattern} (for example {example!r}); got {text!r}", text)


def regime_name(name: str, parameter: str = "regime") -> RegimeName:
    """The regime a query names; a 422 naming ``parameter`` and the regimes where it names none."""
    if name not in REGIME_NAMES:
        raise parameter_error(parameter, f"must be one of {', '.join(REGIME_NAMES)}; got {name!r}", name)
    return RegimeName(name)


def chosen_regime(regime: str, c: float, beta: float, batch: int) -> CostRegime:
    return cost_regime(regime_name(regime), c, beta=beta, batch=batch)


def text_parameter(name: str, text: str, limit: int = inputs.MAX_TEXT) -> str:
    if len(text) > limit:
        raise parameter_error(name, f"must be at most {limit:,} characters; got {len(text):,}", text)
    return text
