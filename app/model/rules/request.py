"""What a rules file is asked for, and the checks of that request before anything is decided.

A request names the engine version, the user's schedule (p, k_max, batch_max), the label whose values are the
classes, the rate window, how long a condition holds before its alert fires, and label matchers added to every
series.  A RulesError names the parameter to blame.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from app.model import engines
from app.model.engines.base import EngineVersion, RulesMetrics
from app.model.limits import InputError

DEFAULT_LABEL = "model_name"
DEFAULT_WINDOW = "5m"
DEFAULT_HOLD = "10m"
DEFAULT_P_MARGIN = 0.1  # p_low = p - this when no calibrated lower bound is given
MIN_WINDOW_S = 1.0
MAX_DURATION_S = 7 * 24 * 3600.0
MAX_MATCH = 500

_DURATION = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
_DURATION_UNITS = (365 * 86400.0, 7 * 86400.0, 86400.0, 3600.0, 60.0, 1.0, 0.001)
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_MATCHER = r'\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(?:=~|!~|!=|=)\s*"(?:[^"\\\n]|\\.)*"\s*'
_MATCHERS = re.compile(rf"^{_MATCHER}(?:,{_MATCHER})*,?\s*$")


class RulesError(InputError):
    """A request rules cannot be made for; ``name`` is the parameter to blame."""


def duration_seconds(text: str, name: str) -> float:
    """Seconds of a Prometheus duration (1h30m, 15s, 500ms); a RulesError naming ``name`` otherwise."""
    match = _DURATION.match(text.strip()) if text.strip() else None
    if match is None:
        raise RulesError(name, f"must be a Prometheus duration such as 30s, 5m or 1h30m; got {text!r}")
    return sum(int(value) * unit for value, unit in zip(match.groups(), _DURATION_UNITS, strict=True) if value)


def check_label(label: str) -> str:
    if not _LABEL.match(label) or label.startswith("__"):
        raise RulesError("label", f"must be a Prometheus label name (letters, digits, _; not __...); got {label!r}")
    return label


def check_match(match: str) -> str:
    """Label matchers added to every series the rules read, such as job="vllm",namespace=~"prod-.*"."""
    text = match.strip()
    if not text:
        return ""
    if len(text) > MAX_MATCH or not _MATCHERS.match(text):
        raise RulesError("match", f'must be label matchers such as job="vllm",env=~"prod.*"; got {match!r}')
    return text.rstrip(",").strip()


@dataclass(frozen=True)
class RulesRequest:
    """What the rules are for: the engine version, the user's schedule (p, k_max, batch_max) and the window."""

    engine: str
    version: str | None = None
    p: float = 0.8
    p_low: float | None = None  # the calibrated lower bound of p; p - DEFAULT_P_MARGIN if None
    k_max: int = 8
    batch_max: int = 1024
    batch: int = 1  # the operating batch of an engine whose config takes one k
    method: str | None = None
    label: str = DEFAULT_LABEL
    window: str = DEFAULT_WINDOW
    hold: str = DEFAULT_HOLD
    match: str = ""
    canary: str = ""  # label matchers of the replicas that run speculation (with control: the canary's rules)
    control: str = ""  # label matchers of the replicas that do not


@dataclass(frozen=True)
class CheckedRequest:
    """A rules request whose engine version, durations, label, matchers and p_low were accepted."""

    version: EngineVersion
    metrics: RulesMetrics
    label: str
    hold_s: float
    match: str
    p_low: float
    canary: str = ""
    control: str = ""


def rules_metrics(engine: str, version: EngineVersion) -> RulesMetrics:
    """The series of this engine version that rules can be built from; a RulesError naming what is missing."""
    module = engines.adapter(engine)
    known: Mapping[str, RulesMetrics] = module.RULES_METRICS
    metrics = known.get(version.name)
    if metrics is None:
        raise RulesError("engine_version", f"{module.TITLE} {version.name}: no Prometheus series are known for it")
    if metrics.missing:
        raise RulesError("engine_version", metrics.missing)
    counted = metrics.drafts or metrics.drafted_per_position or metrics.verify_calls
    if not (counted or metrics.accept_length):
        raise RulesError(
            "engine_version", f"{module.TITLE} {version.name} exports no counter of verifications and no accept length"
        )
    return metrics


def check(request: RulesRequest) -> CheckedRequest:
    """What rules can be made for, before anything is decided; a RulesError naming the parameter otherwise."""
    if request.engine not in engines.ADAPTERS:
        raise RulesError("engine", f"must be one of {', '.join(engines.ADAPTERS)}; got {request.engine!r}")
    try:
        version = engines.version(request.engine, request.version)
    except engines.UnknownVersionError as error:
        raise RulesError(
            "engine_version", f"{error.engine} has no version {error.version!r}; known: {', '.join(error.known)}"
        ) from None
    metrics = rules_metrics(request.engine, version)
    label = check_label(request.label)
    window_s = duration_seconds(request.window, "window")
    if not MIN_WINDOW_S <= window_s <= MAX_DURATION_S:
        raise RulesError("window", f"must be from 1s to 7d; got {request.window!r}")
    hold_s = duration_seconds(request.hold, "hold")
    if hold_s > MAX_DURATION_S:
        raise RulesError("hold", f"must be at most 7d; got {request.hold!r}")
    match = check_match(request.match)
    p_low = request.p_low if request.p_low is not None else max(0.0, request.p - DEFAULT_P_MARGIN)
    if not 0.0 <= p_low <= request.p:
        raise RulesError("p_low", f"must lie from 0 to p = {request.p:g}; got {p_low:g}")
    canary, control = check_canary(request.engine, request.canary, request.control)
    return CheckedRequest(version, metrics, label, hold_s, match, p_low, canary, control)


def check_canary(engine: str, canary: str, control: str) -> tuple[str, str]:
    """Both matchers or neither, each label matchers, not the same, on an engine with decode-time series."""
    canary, control = canary.strip(), control.strip()
    if not canary and not control:
        return "", ""
    for name, value in (("canary", canary), ("control", control)):
        if not value:
            other = "control" if name == "canary" else "canary"
            raise RulesError(name, f"is required with {other}: the canary's rules compare the two")
        if len(value) > MAX_MATCH or not _MATCHERS.match(value):
            raise RulesError(name, f'must be label matchers such as role="{name}"; got {value!r}')
    canary, control = canary.rstrip(",").strip(), control.rstrip(",").strip()
    if sorted(part.replace(" ", "") for part in canary.split(",")) == sorted(
        part.replace(" ", "") for part in control.split(",")
    ):
        raise RulesError("control", f"selects what canary selects ({canary}): give the plain replicas")
    decode = engines.adapter(engine).DECODE_TIME
    if decode.missing or not decode.seconds:
        raise RulesError("canary", decode.missing or f"{engine} exports no decode-time series")
    return canary, control
