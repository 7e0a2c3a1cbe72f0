"""Prometheus rules for a fleet: the arithmetic of speculative decoding as recording and alerting rules.

From an engine version's own series (its adapter's ``RULES_METRICS``) and the user's setup and schedule, per
instance and class (the value of a label, ``model_name`` by default), over a rate window:

- recording rules: the running batch, the acceptance per position (drafts whose token at that position was
  accepted, over all drafts), tokens per verification (1 + accepted / drafts), the implied i.i.d. p (the
  first-position estimator accepted at position 0 / drafts, unbiased whatever the draft lengths), the break-even
  tokens per verification at the running batch (the cycle cost k c + v(k) of the setup at the k the engine's
  config runs there, a piecewise-linear expression over batch ranges), the implied speedup (tokens per
  verification / break-even), the schedule's k at the running batch, the k the engine runs where it shows, and
  the best k at the measured p and the running batch;
- alerts: speculation not paying (speedup below 1 for ``hold``), acceptance below its calibrated interval, and
  a draft length off the schedule at the running batch.  Each alert's value is a k and its summary says what
  to do with it (run that k, or turn speculation off).

Everything is computed here as data (``document``) and written with PyYAML (``text``).  Annotations are
templates with a Python twin (:meth:`Template.render`), so that a test can say what an alert will read.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import yaml

from app.model import closed_form, engines
from app.model.capacity import Decision
from app.model.engines.base import EngineVersion, Exported, RulesMetrics, describe_batches, runs_of
from app.model.regimes import RooflineSetup, best_k_by_batch, roofline_draft_cost, verification_costs

DEFAULT_LABEL = "model_name"
DEFAULT_WINDOW = "5m"
DEFAULT_HOLD = "10m"
DEFAULT_P_MARGIN = 0.1  # p_low = p - this when no calibrated lower bound is given
MIN_DRAFTS = 20  # drafts in the window before an alert on counts may fire
Z_999 = 3.2905  # two-sided 99.9% normal quantile: the acceptance alert uses the 99.9% upper bound of p
P_STEP = 0.05  # bins of measured p for the best k (each bin takes the k that is best at its lower edge)
COST_TOLERANCE = 0.005  # largest relative error of the piecewise-linear break-even against the roofline
P_TOLERANCE = 0.005  # largest error of p read back from tokens per verification (SGLang)
MAX_READ_BACK_K = 16  # SGLang: p is read back from tokens per verification at the running k up to this (and the
# schedule's own k above it)
MIN_WINDOW_S = 1.0
MAX_DURATION_S = 7 * 24 * 3600.0
MAX_MATCH = 500
SEVERITY = "warning"
RULES_LABEL = "specdec_rules"

RUNNING_BATCH = "specdec:running_batch"
SCHEDULE_BATCH = "specdec:schedule_batch"
SCHEDULE_K = "specdec:schedule_k"
BREAK_EVEN = "specdec:break_even_tokens"
DRAFTS = "specdec:drafts"
RUNNING_K = "specdec:running_k"
TOKENS = "specdec:tokens_per_verification"
AT_POSITION = "specdec:acceptance_at_position"
ACCEPTANCE = "specdec:acceptance_p"
ACCEPTANCE_UPPER = "specdec:acceptance_p_upper"
SPEEDUP = "specdec:implied_speedup"
RECOMMENDED_K = "specdec:recommended_k"

NOT_PAYING = "SpeculativeDecodingNotPaying"
ACCEPTANCE_LOW = "SpeculativeAcceptanceBelowCalibrated"
OFF_SCHEDULE = "SpeculativeDraftLengthOffSchedule"

_DURATION = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
_DURATION_UNITS = (365 * 86400.0, 7 * 86400.0, 86400.0, 3600.0, 60.0, 1.0, 0.001)
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_MATCHER = r'\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(?:=~|!~|!=|=)\s*"(?:[^"\\\n]|\\.)*"\s*'
_MATCHERS = re.compile(rf"^{_MATCHER}(?:,{_MATCHER})*,?\s*$")


class RulesError(ValueError):
    """A request rules cannot be made for; ``name`` is the parameter to blame."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


# ---------------------------------------------------------------------------
# Inputs


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
    batch: int = 1  # the operating batch of engines that take one k (SGLang without tiers, llama.cpp)
    method: str | None = None
    label: str = DEFAULT_LABEL
    window: str = DEFAULT_WINDOW
    hold: str = DEFAULT_HOLD
    match: str = ""


# ---------------------------------------------------------------------------
# Annotations: templates with a Python twin


@dataclass(frozen=True)
class Field:
    """A place in an annotation filled at alert time: a label's value, or the alert's value (a k)."""

    kind: str  # 'label', 'k', 'action'
    name: str = ""


@dataclass(frozen=True)
class Template:
    parts: tuple[str | Field, ...]

    def go(self) -> str:
        """As Prometheus's Go template."""
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            elif part.kind == "label":
                out.append(f'{{{{ index $labels "{part.name}" }}}}')
            elif part.kind == "k":
                out.append('{{ printf "%.0f" $value }}')
            else:
                off, on = part.name.split("|")
                out.append(
                    f'{{{{ if eq $value 0.0 }}}}{off}{{{{ else }}}}{on}{{{{ printf "%.0f" $value }}}}{{{{ end }}}}'
                )
        return "".join(out)

    def described(self, labels: dict[str, str]) -> str:
        """The text for any value of the alert: the k as "k", an action as both its branches."""
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            elif part.kind == "label":
                out.append(labels.get(part.name, part.name))
            elif part.kind == "k":
                out.append("k")
            else:
                off, on = part.name.split("|")
                out.append(f"{on}k (or {off})")
        return "".join(out)

    def render(self, labels: dict[str, str], value: float) -> str:
        """What Prometheus writes for these labels and this value."""
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            elif part.kind == "label":
                out.append(labels.get(part.name, ""))
            elif part.kind == "k":
                out.append(f"{value:.0f}")
            else:
                off, on = part.name.split("|")
                out.append(off if value == 0.0 else f"{on}{value:.0f}")
        return "".join(out)


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    summary: Template
    description: Template
    meaning: str  # what the alert's value is


# ---------------------------------------------------------------------------
# Piecewise expressions


def pieces(
    x: np.ndarray, y: np.ndarray, tolerance: float, relative: bool, breaks: Sequence[int] = ()
) -> list[tuple[int, int]]:
    """Index ranges [i, j] whose chord from (x_i, y_i) to (x_j, y_j) stays within ``tolerance`` of y at every
    point between (relative to y if ``relative``); a range never holds an index of ``breaks`` after its first."""
    starts = set(breaks)
    found: list[tuple[int, int]] = []
    first, count = 0, len(x)
    while first < count:
        last = first
        while last + 1 < count and last + 1 not in starts:
            candidate = last + 1
            slope = (y[candidate] - y[first]) / (x[candidate] - x[first])
            line = y[first] + slope * (x[first : candidate + 1] - x[first])
            error = np.abs(line - y[first : candidate + 1])
            if relative:
                error = error / np.abs(y[first : candidate + 1])
            if float(error.max()) > tolerance:
                break
            last = candidate
        found.append((first, last))
        first = last + 1
    return found


def number(value: float) -> str:
    text = f"{value:.6g}"
    return "0" if text == "-0" else text


def _between(variable: str, low: float | None, high: float | None) -> list[str]:
    conditions = []
    if low is not None:
        conditions.append(f"({variable} >= bool {number(low)})")
    if high is not None:
        conditions.append(f"({variable} < bool {number(high)})")
    return conditions


def piecewise_linear(variable: str, x: np.ndarray, y: np.ndarray, ranges: list[tuple[int, int]]) -> str:
    """Sum over ranges of (a + b x) * (x in [x_i, x_{j+1})); the first range is open below, the last above."""
    terms = []
    for first, last in ranges:
        slope = 0.0 if last == first else float((y[last] - y[first]) / (x[last] - x[first]))
        intercept = float(y[first] - slope * x[first])
        value = f"({number(intercept)} + {number(slope)} * {variable})" if slope else number(intercept)
        low = float(x[first]) if first > 0 else None
        high = float(x[last + 1]) if last + 1 < len(x) else None
        conditions = _between(variable, low, high)
        if not conditions:
            terms.append(value if slope else f"({variable} * 0 + {value})")
        else:
            terms.append(" * ".join([value, *conditions]))
    return "\n  + ".join(terms)


def piecewise_constant(variable: str, values: Sequence[int], start: int = 1, base: bool = True) -> str:
    """sum of k * (x in [first, last + 1)) over runs of equal k in values (the first at x = start); 0 elsewhere.

    ``base`` adds a term 0 * x, so that the sum is a vector (0) where no run has k > 0."""
    terms = [f"({variable} * 0)"] if base else []
    runs = runs_of(values)
    for index, (first, last, k) in enumerate(runs):
        if k == 0:
            continue
        low = float(first + start - 1) if index > 0 else None
        high = float(last + start) if index + 1 < len(runs) else None
        terms.append(" * ".join([str(k), *(_between(variable, low, high) or [f"({variable} >= bool 0)"])]))
    return "\n  + ".join(terms)


# ---------------------------------------------------------------------------
# The rules


@dataclass(frozen=True)
class RulesFile:
    engine: str
    rules_id: str  # the value of RULES_LABEL on every series these rules record
    title: str
    version: EngineVersion
    label: str
    window: str
    hold: str
    match: str
    p: float
    p_low: float
    decision: Decision
    engine_k: tuple[int, ...]  # the k the engine's config runs at batch 1..batch_limit
    metrics: RulesMetrics
    records: tuple[str, ...]
    alerts: tuple[Alert, ...]
    document: dict[str, Any]
    text: str
    setup_text: str
    notes: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()  # what these rules cannot check on this engine version
    cost_pieces: int = 0

    def alert(self, name: str) -> Alert:
        return next(alert for alert in self.alerts if alert.name == name)


def _rules_metrics(engine: str, version: EngineVersion) -> RulesMetrics:
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


def setup_text(setup: RooflineSetup) -> str:
    return (
        f"{setup.target.name} verified with {setup.draft.name} drafts on {setup.devices} × {setup.accelerator.name}, "
        f"{setup.context_tokens:,} tokens of context"
    )


def cycle_cost(setup: RooflineSetup, batches: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """k c(B) + v(B, k): the cost of one cycle in target passes, per batch at its k (1 at k = 0)."""
    cost: np.ndarray = ks * roofline_draft_cost(setup, batches) + verification_costs(setup, batches, ks)
    return cost


@dataclass(frozen=True)
class CheckedRequest:
    """A rules request whose engine version, durations, label, matchers and p_low were accepted."""

    version: EngineVersion
    metrics: RulesMetrics
    label: str
    hold_s: float
    match: str
    p_low: float


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
    metrics = _rules_metrics(request.engine, version)
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
    return CheckedRequest(version, metrics, label, hold_s, match, p_low)


def build(request: RulesRequest, setup: RooflineSetup, decision: Decision, exported: Exported) -> RulesFile:
    """The rules file for this engine version, setup and decided schedule, priced at the k ``exported`` runs.

    The decision and the config are the plan's (``app.service.plan``): the rules never decide again, so that the
    schedule they alert on is the one the config was written from.  A RulesError names the parameter to blame.
    """
    checked = check(request)
    module = engines.adapter(request.engine)
    version, metrics, label, match, p_low = (
        checked.version,
        checked.metrics,
        checked.label,
        checked.match,
        checked.p_low,
    )
    limit = decision.batch_limit
    if limit < 1:
        raise RulesError("devices", decision.headline)
    notes = [decision.headline]
    engine_k = list(exported.runs) if len(exported.runs) == limit else [0] * limit
    fallback = max(engine_k) or max(decision.best_k) or request.k_max
    if 0 in engine_k:
        off = [batch for batch, k in enumerate(engine_k, start=1) if k == 0]
        notes.append(
            f"the config runs no speculation at batches {_batches(off)}; should the server draft there anyway, the "
            f"break-even there is priced at k = {fallback}"
        )
    priced = [k or fallback for k in engine_k]
    builder = _Builder(module.TITLE, request.engine, metrics, label, request.window, match, limit)
    records = builder.records(setup, decision, engine_k, priced, request, p_low)
    alerts, unchecked = builder.alerts(request.hold, checked.hold_s, p_low)
    notes += [f"{module.TITLE} {version.name}: {text}" for text in metrics.loses]
    if exported.differs_at:
        notes.append(
            f"with the config written for it, {module.TITLE} {version.name} runs another k than the schedule at "
            f"batches {_batches(exported.differs_at)}: the break-even is priced at the k it runs"
        )
    identity = rules_id(request.engine, match)
    for rule in records:
        rule["expr"] = scoped(rule["expr"], identity)
        rule["labels"] = {RULES_LABEL: identity}
    alerts = [replace(alert, expr=scoped(alert.expr, identity)) for alert in alerts]
    for rule in builder.alert_rules:
        rule["expr"] = scoped(rule["expr"], identity)
    group: dict[str, Any] = {"name": f"specdec-lab-{identity}", "rules": [*records, *builder.alert_rules]}
    document = {"groups": [group]}
    text = header(module.TITLE, version, label, request.window, request.hold, setup, decision, notes, unchecked)
    text += dump(document)
    return RulesFile(
        engine=request.engine,
        rules_id=identity,
        title=module.TITLE,
        version=version,
        label=label,
        window=request.window,
        hold=request.hold,
        match=match,
        p=request.p,
        p_low=p_low,
        decision=decision,
        engine_k=tuple(engine_k),
        metrics=metrics,
        records=tuple(rule["record"] for rule in records),
        alerts=tuple(alerts),
        document=document,
        text=text,
        setup_text=setup_text(setup),
        notes=tuple(notes),
        unchecked=tuple(unchecked),
        cost_pieces=builder.cost_pieces,
    )


def rules_id(engine: str, match: str) -> str:
    """Names the series one rules file records (RULES_LABEL), so that files for several engines, or for one
    engine's deployments told apart by ``match``, can be loaded into one Prometheus side by side."""
    if not match:
        return engine
    return f"{engine}-{hashlib.sha256(match.encode()).hexdigest()[:8]}"


_RECORDED = re.compile(r"\b(specdec:[a-z_]+)\b(?!\{)")


def scoped(expr: str, identity: str) -> str:
    """Every reference to a recorded series limited to this file's own (RULES_LABEL = identity)."""
    return _RECORDED.sub(lambda found: f'{found.group(1)}{{{RULES_LABEL}="{identity}"}}', expr)


def _batches(batches: Sequence[int]) -> str:
    return describe_batches(batches)


class _Builder:
    """The expressions of one engine version's rules."""

    def __init__(
        self, title: str, engine: str, metrics: RulesMetrics, label: str, window: str, match: str, limit: int
    ) -> None:
        self.title, self.engine, self.metrics, self.label = title, engine, metrics, label
        self.window, self.match, self.limit = window, match, limit
        self.by = ", ".join(("instance",) if label == "instance" else ("instance", label))
        self.alert_rules: list[dict[str, Any]] = []
        self.cost_pieces = 0

    def series(self, name: str, extra: str = "") -> str:
        inside = ", ".join(part for part in (extra, self.match) if part)
        return f"{name}{{{inside}}}" if inside else name

    def increase(self, name: str, extra: str = "", by: str = "") -> str:
        return f"sum by ({by or self.by}) (increase({self.series(name, extra)}[{self.window}]))"

    @property
    def counted(self) -> bool:
        return bool(self.metrics.drafts or self.metrics.drafted_per_position or self.metrics.verify_calls)

    @property
    def positional(self) -> bool:
        return bool(self.metrics.per_position)

    def records(
        self,
        setup: RooflineSetup,
        decision: Decision,
        engine_k: list[int],
        priced: list[int],
        request: RulesRequest,
        p_low: float,
    ) -> list[dict[str, Any]]:
        m = self.metrics
        limit = self.limit
        rules: list[dict[str, Any]] = []

        def record(name: str, expr: str) -> None:
            rules.append({"record": name, "expr": expr})

        record(RUNNING_BATCH, f"sum by ({self.by}) (avg_over_time({self.series(m.running)}[{self.window}]))")
        record(SCHEDULE_BATCH, f"clamp({RUNNING_BATCH}, 1, {limit})")
        # the k the config runs at each batch (the plan's export, read back): a server that follows the config
        # is on schedule at every batch
        record(SCHEDULE_K, piecewise_constant(SCHEDULE_BATCH, engine_k))
        batches = np.arange(1, limit + 1, dtype=np.float64)
        ks = np.asarray(priced, dtype=np.float64)
        cost = cycle_cost(setup, batches, ks)
        breaks = [index for index in range(1, limit) if priced[index] != priced[index - 1]]
        ranges = pieces(batches, cost, COST_TOLERANCE, True, breaks)
        self.cost_pieces = len(ranges)
        record(BREAK_EVEN, piecewise_linear(SCHEDULE_BATCH, batches, cost, ranges))
        if m.drafts:
            record(DRAFTS, self.increase(m.drafts))
        elif m.drafted_per_position:
            record(DRAFTS, self.increase(m.drafted_per_position, f'{m.position_label}="0"'))
        elif m.verify_calls:
            record(DRAFTS, self.increase(m.verify_calls))
        running_k = self.running_k()
        if running_k:
            record(RUNNING_K, running_k)
        if m.accepted:
            record(TOKENS, f"1 + {self.increase(m.accepted)} / on ({self.by}) ({DRAFTS} > 0)")
        elif m.per_position:
            record(TOKENS, f"1 + {self.increase(m.per_position)} / on ({self.by}) ({DRAFTS} > 0)")
        elif m.verify_calls and m.generated:
            record(TOKENS, f"{self.increase(m.generated)} / on ({self.by}) ({DRAFTS} > 0)")
        else:
            record(TOKENS, f"avg by ({self.by}) (avg_over_time({self.series(m.accept_length)}[{self.window}]))")
        if m.per_position:
            position = m.position_label
            at_position = (
                f"{self.increase(m.per_position, by=f'{self.by}, {position}')}\n"
                f"  / on ({self.by}) group_left ()\n  ({DRAFTS} > 0)"
            )
            if position != "position":
                renamed = f'label_replace(\n  {at_position},\n  "position", "$1", "{position}", "(.*)")'
                at_position = f"sum without ({position}) ({renamed})"
            record(AT_POSITION, at_position)
            first = f'{position}="0"'
            record(ACCEPTANCE, f"{self.increase(m.per_position, first)} / on ({self.by}) ({DRAFTS} > 0)")
            z2 = Z_999 * Z_999
            p, n = ACCEPTANCE, DRAFTS
            record(
                ACCEPTANCE_UPPER,
                f"(\n  {p} + {number(z2 / 2)} / {n}\n"
                f"  + {number(Z_999)} * sqrt({p} * (1 - {p}) / {n} + {number(z2 / 4)} / ({n} * {n}))\n"
                f") / (1 + {number(z2)} / {n})",
            )
        else:
            record(ACCEPTANCE, self.p_from_tokens(priced, request.k_max, decision.best_k))
        record(SPEEDUP, f"{TOKENS} / {BREAK_EVEN}")
        record(RECOMMENDED_K, self.recommended_k(setup, request.p, request.k_max))
        return rules

    def running_k(self) -> str:
        m = self.metrics
        if m.k_from == "gauge":
            return f"max by ({self.by}) (avg_over_time({self.series(m.running_k)}[{self.window}]))"
        if m.k_from == "positions":
            return f"count by ({self.by}) (count by ({self.by}, {m.position_label}) ({self.series(m.per_position)}))"
        if m.k_from == "mean-draft-length":
            return f"{self.increase(m.draft_tokens)} / on ({self.by}) ({DRAFTS} > 0)"
        if m.k_from == "longest-draft":
            drafted = f"increase({self.series(m.drafted_per_position)}[{self.window}])"
            return f"count by ({self.by}) (sum by ({self.by}, {m.position_label}) ({drafted}) > 0)"
        return ""

    def p_from_tokens(self, priced: list[int], k_max: int, schedule: Sequence[int]) -> str:
        """p from tokens per verification at the k running: E[T](p, k) = (1 - p^(k+1)) / (1 - p) read back.

        With a gauge of the k running, at every k from 1 to k_max (to MAX_READ_BACK_K, and the schedule's own k
        above it); else at the one k the config runs."""
        grid = np.linspace(0.0, 1.0, 401)
        terms = []
        if self.metrics.k_from == "gauge":
            ks = sorted({*range(1, min(k_max, MAX_READ_BACK_K) + 1), *(k for k in schedule if k > 0)})
        else:
            ks = [max(priced)]
        for k in ks:
            lengths = np.array([closed_form.expected_tokens(float(p), k) for p in grid])
            ranges = pieces(lengths, grid, P_TOLERANCE, False)
            inner = piecewise_linear(TOKENS, lengths, grid, ranges)
            if len(ks) > 1:
                terms.append(f"(round({RUNNING_K}) == bool {k}) * (\n  {inner}\n  )")
            else:
                terms.append(inner)
        joined = "\n  + ".join(terms)
        if len(ks) > 1:
            allowed = (
                " or ".join(f"(round({RUNNING_K}) == {k})" for k in ks) if ks != list(range(1, ks[-1] + 1)) else ""
            )
            known = allowed or f"({RUNNING_K} >= 0.5) and on ({self.by}) ({RUNNING_K} < {ks[-1] + 0.5})"
            known = f"and on ({self.by}) ({known})"
            return f"clamp(\n  ({joined})\n  {known},\n  0, 1)"
        return f"clamp(\n  {joined},\n  0, 1)"

    def recommended_k(self, setup: RooflineSetup, p: float, k_max: int) -> str:
        """The best k at the measured p (its bin's lower edge) and the running batch, on this setup."""
        batches = np.arange(1, self.limit + 1, dtype=np.int64)
        terms = [f"({ACCEPTANCE} * 0)"]
        edges = [round(P_STEP * index, 6) for index in range(round(1 / P_STEP))]
        for index, low in enumerate(edges):
            best, _ = best_k_by_batch(low, setup, batches, k_max)
            if not best.any():
                continue
            high = edges[index + 1] if index + 1 < len(edges) else None
            conditions = _between(ACCEPTANCE, low if index else None, high)
            inner = piecewise_constant(SCHEDULE_BATCH, [int(k) for k in best], base=False)
            terms.append(" * ".join([*conditions, f"(\n    {inner.replace(chr(10), chr(10) + '  ')}\n  )"]))
        return "\n  + ".join(terms)

    def alerts(self, hold: str, hold_s: float, p_low: float) -> tuple[list[Alert], list[str]]:
        m = self.metrics
        unchecked: list[str] = []
        enough = f" and ({DRAFTS} >= {MIN_DRAFTS})" if self.counted else ""
        where: list[str | Field] = [Field("label", "instance"), f" ({self.label}=", Field("label", self.label), ")"]
        alerts = [
            Alert(
                NOT_PAYING,
                f"{RECOMMENDED_K} and ({SPEEDUP} < 1){enough}",
                Template(
                    ("Speculative decoding is not paying on ", *where, ": ", Field("action", "turn it off|run k = "))
                ),
                Template(
                    (
                        f"For {hold} the tokens per verification over {self.window} ({TOKENS}) have stayed below the "
                        f"break-even k c + v(k) of this setup at the running batch ({BREAK_EVEN}): each cycle costs "
                        "more target passes than the tokens it yields, so the server is slower than without "
                        "speculation. At the acceptance measured now and the running batch the best draft length on "
                        "this setup is k = ",
                        Field("k"),
                        " (0: no k pays, turn speculation off)",
                        ". Look at the acceptance and the batch on the dashboard for why.",
                    )
                ),
                "the best k at the measured p and running batch",
            )
        ]
        if self.positional:
            low_expr = f"({ACCEPTANCE_UPPER} < {number(p_low)})"
            how = f"its 99.9% upper bound ({ACCEPTANCE_UPPER})"
        else:
            low_expr = f"({ACCEPTANCE} < {number(p_low)})"
            how = f"the i.i.d. p that gives the tokens per verification ({ACCEPTANCE})"
        alerts.append(
            Alert(
                ACCEPTANCE_LOW,
                f"{RECOMMENDED_K} and {low_expr}{enough}",
                Template(
                    (
                        "Acceptance on ",
                        *where,
                        f" is below its calibrated interval (p < {number(p_low)}): ",
                        Field("action", "turn speculation off|run k = "),
                    )
                ),
                Template(
                    (
                        f"For {hold} the acceptance over {self.window}, {how}, has stayed below the calibrated lower "
                        f"bound {number(p_low)}: the drafts agree with the target less than when the rules were "
                        "made (did the workload, the draft model or the engine version change?). At the acceptance "
                        "measured now and the running batch the best k on this setup is ",
                        Field("k"),
                        " (0: speculation off). Recalibrate with specdec-lab calibrate --from the server's /metrics "
                        "and write these rules again.",
                    )
                ),
                "the best k at the measured p and running batch",
            )
        )
        if m.k_from in ("gauge", "positions"):
            off_expr = f"{SCHEDULE_K} and (abs({SCHEDULE_K} - {RUNNING_K}) >= 0.5)"
            seen = {
                "gauge": f"{m.running_k} (the k running at each scrape)",
                "positions": "the number of per-position series (the one k the server runs)",
            }[m.k_from]
        elif m.k_from in ("mean-draft-length", "longest-draft"):
            off_expr = f"{SCHEDULE_K} and ({RUNNING_K} - {SCHEDULE_K} >= 0.5)"
            seen = {
                "mean-draft-length": "the mean draft length (drafted / drafts; at most the k run, so only a server "
                "drafting longer than the schedule is seen)",
                "longest-draft": "the longest draft in the window (only a server drafting longer than the schedule "
                "is seen)",
            }[m.k_from]
        else:
            off_expr = ""
            seen = ""
            unchecked.append(
                f"{OFF_SCHEDULE}: {self.title} exports no gauge or counter of the draft length it runs, so a draft "
                "length off the schedule cannot be checked"
            )
        if off_expr:
            alerts.append(
                Alert(
                    OFF_SCHEDULE,
                    off_expr,
                    Template(
                        (
                            "The draft length on ",
                            *where,
                            " is not the schedule's at the running batch: ",
                            Field("action", "turn speculation off at this batch|set k = "),
                        )
                    ),
                    Template(
                        (
                            f"For {hold} the draft length the server runs, read from {seen} ({RUNNING_K}), has "
                            f"differed from the schedule's k at the running batch ({SCHEDULE_K} = ",
                            Field("k"),
                            f"). To follow the schedule, {engines.adapter(self.engine).HOW_TO_APPLY}.",
                        )
                    ),
                    "the schedule's k at the running batch",
                )
            )
        for alert in alerts:
            rule: dict[str, Any] = {"alert": alert.name, "expr": alert.expr}
            if hold_s > 0:
                rule["for"] = hold
            rule["labels"] = {"severity": SEVERITY}
            rule["annotations"] = {"summary": alert.summary.go(), "description": alert.description.go()}
            self.alert_rules.append(rule)
        return alerts, unchecked


# ---------------------------------------------------------------------------
# YAML


class _Dumper(yaml.SafeDumper):  # type: ignore[misc]
    pass


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _string)


def dump(document: dict[str, Any]) -> str:
    text: str = yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=4096, allow_unicode=True)
    return text


def header(
    title: str,
    version: EngineVersion,
    label: str,
    window: str,
    hold: str,
    setup: RooflineSetup,
    decision: Decision,
    notes: Sequence[str],
    unchecked: Sequence[str],
) -> str:
    lines = [
        f"specdec-lab rules for {title} {version.name}: per instance and {label}, window {window}, alerts after {hold}",
        f"setup: {setup_text(setup)}; schedule for p = {decision.p:g}, k up to {decision.k_max}, "
        f"batches 1 to {decision.batch_limit}",
        *(f"note: {note}" for note in notes),
        *(f"not checked: {item}" for item in unchecked),
    ]
    return "".join(f"# {line}\n" for line in lines)
