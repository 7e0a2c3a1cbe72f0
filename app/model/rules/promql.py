"""PromQL of the rules: the series they record, and the expressions that record them.

From an engine version's own series (its adapter's ``RulesMetrics``), per instance and class (the value of a
label) over a rate window: the running batch, drafts, tokens per verification, the acceptance per position and
the i.i.d. p with its upper bound, the mean draft length, the counter resets (restarts), the k the engine runs
where it shows (``Series.measured``: what the watch reads, recorded or evaluated).  From the user's setup and the plan's
schedule: the schedule's k and the break-even tokens per verification at the running batch (piecewise
expressions over batch ranges), p read back from tokens per verification where an engine counts no positions,
and the best k at the measured p.  Recorded series are named once here (``specdec:*``), ``scoped`` limits every
reference to them to one rules file's own, and ``inlined`` writes a record's expression without references to
the others, for a Prometheus where the rules are not loaded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.model.arithmetic import closed_form
from app.model.cost.regimes import RooflineSetup, best_k_by_batch, draft_costs, verification_costs
from app.model.engines.base import RulesMetrics, runs_of

Z_999 = 3.2905  # two-sided 99.9% normal quantile: the acceptance alert uses the 99.9% upper bound of p
P_STEP = 0.05  # bins of measured p for the best k (each bin takes the k that is best at its lower edge)
COST_TOLERANCE = 0.005  # largest relative error of the piecewise-linear break-even against the roofline
P_TOLERANCE = 0.005  # largest error of p read back from tokens per verification (an engine counting no positions)
MAX_READ_BACK_K = 16  # with a gauge of the k running, p is read back from tokens per verification at each k up to
# this (and the schedule's own k above it)
RULES_LABEL = "specdec_rules"  # on every series a rules file records: which file recorded it

RUNNING_BATCH = "specdec:running_batch"
SCHEDULE_BATCH = "specdec:schedule_batch"
SCHEDULE_K = "specdec:schedule_k"
BREAK_EVEN = "specdec:break_even_tokens"
DRAFTS = "specdec:drafts"
DRAFT_LENGTH = "specdec:draft_length"
COUNTER_RESETS = "specdec:counter_resets"
RUNNING_K = "specdec:running_k"
TOKENS = "specdec:tokens_per_verification"
AT_POSITION = "specdec:acceptance_at_position"
ACCEPTANCE = "specdec:acceptance_p"
ACCEPTANCE_UPPER = "specdec:acceptance_p_upper"
SPEEDUP = "specdec:implied_speedup"
RECOMMENDED_K = "specdec:recommended_k"

_RECORDED = re.compile(r"\b(specdec:[a-z_]+)\b(?!\{)")


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


def between(variable: str, low: float | None, high: float | None) -> list[str]:
    """The conditions low <= variable < high, as 0/1 factors (an open end has none)."""
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
        conditions = between(variable, low, high)
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
        terms.append(" * ".join([str(k), *(between(variable, low, high) or [f"({variable} >= bool 0)"])]))
    return "\n  + ".join(terms)


# ---------------------------------------------------------------------------
# From the setup and the schedule


def cycle_cost(setup: RooflineSetup, batches: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """k c(B) + v(B, k): the cost of one cycle in target passes, per batch at its k (1 at k = 0)."""
    cost: np.ndarray = draft_costs(setup, batches, ks) + verification_costs(setup, batches, ks)
    return cost


def schedule_batch(limit: int) -> str:
    """The running batch within the batches the schedule covers, 1 to ``limit``."""
    return f"clamp({RUNNING_BATCH}, 1, {limit})"


def schedule_k(engine_k: Sequence[int]) -> str:
    """The k the config runs at the running batch (0 where it runs none)."""
    return piecewise_constant(SCHEDULE_BATCH, engine_k)


def break_even(setup: RooflineSetup, priced: Sequence[int]) -> tuple[str, int]:
    """The cycle cost at the running batch, within COST_TOLERANCE of the roofline, and the number of pieces."""
    limit = len(priced)
    batches = np.arange(1, limit + 1, dtype=np.float64)
    cost = cycle_cost(setup, batches, np.asarray(priced, dtype=np.float64))
    breaks = [index for index in range(1, limit) if priced[index] != priced[index - 1]]
    ranges = pieces(batches, cost, COST_TOLERANCE, True, breaks)
    return piecewise_linear(SCHEDULE_BATCH, batches, cost, ranges), len(ranges)


def recommended_k(setup: RooflineSetup, limit: int, k_max: int) -> str:
    """The best k at the measured p (its bin's lower edge) and the running batch, on this setup."""
    batches = np.arange(1, limit + 1, dtype=np.int64)
    terms = [f"({ACCEPTANCE} * 0)"]
    edges = [round(P_STEP * index, 6) for index in range(round(1 / P_STEP))]
    for index, low in enumerate(edges):
        best, _ = best_k_by_batch(low, setup, batches, k_max)
        if not best.any():
            continue
        high = edges[index + 1] if index + 1 < len(edges) else None
        conditions = between(ACCEPTANCE, low if index else None, high)
        inner = piecewise_constant(SCHEDULE_BATCH, [int(k) for k in best], base=False)
        terms.append(" * ".join([*conditions, f"(\n    {inner.replace(chr(10), chr(10) + '  ')}\n  )"]))
    return "\n  + ".join(terms)


def acceptance_upper() -> str:
    """The 99.9% Wilson upper bound of p over the drafts in the window."""
    z2 = Z_999 * Z_999
    p, n = ACCEPTANCE, DRAFTS
    return (
        f"(\n  {p} + {number(z2 / 2)} / {n}\n"
        f"  + {number(Z_999)} * sqrt({p} * (1 - {p}) / {n} + {number(z2 / 4)} / ({n} * {n}))\n"
        f") / (1 + {number(z2)} / {n})"
    )


def speedup() -> str:
    return f"{TOKENS} / {BREAK_EVEN}"


# ---------------------------------------------------------------------------
# From the engine's own series


@dataclass(frozen=True)
class Series:
    """An engine version's series, per instance and class over a rate window, limited by label matchers."""

    metrics: RulesMetrics
    label: str
    window: str
    match: str = ""

    @property
    def by(self) -> str:
        return ", ".join(("instance",) if self.label == "instance" else ("instance", self.label))

    @property
    def counted(self) -> bool:
        """Whether the engine counts verifications (drafts, drafts reaching position 0, or verify calls)."""
        return bool(self.metrics.drafts or self.metrics.drafted_per_position or self.metrics.verify_calls)

    @property
    def positional(self) -> bool:
        return bool(self.metrics.per_position)

    def series(self, name: str, extra: str = "") -> str:
        inside = ", ".join(part for part in (extra, self.match) if part)
        return f"{name}{{{inside}}}" if inside else name

    def increase(self, name: str, extra: str = "", by: str = "") -> str:
        return f"sum by ({by or self.by}) (increase({self.series(name, extra)}[{self.window}]))"

    def running_batch(self) -> str:
        return f"sum by ({self.by}) (avg_over_time({self.series(self.metrics.running)}[{self.window}]))"

    def drafts(self) -> str:
        """Verifications in the window; empty where the engine counts none."""
        return self.increase(*self.verifications_counter()) if self.counted else ""

    def verifications_counter(self) -> tuple[str, str]:
        """The counter of verifications and the matcher that picks it out (position 0 of drafts per position)."""
        m = self.metrics
        if m.drafts or not m.drafted_per_position:
            return m.drafts or m.verify_calls, ""
        return m.drafted_per_position, f'{m.position_label}="0"'

    def resets(self) -> str:
        """Restarts in the window: the resets of the counter of verifications (``increase`` counts across them)."""
        name, extra = self.verifications_counter()
        return f"sum by ({self.by}) (resets({self.series(name, extra)}[{self.window}]))"

    def draft_length(self) -> str:
        """Drafted tokens per draft; empty where the engine counts no drafted tokens."""
        m = self.metrics
        drafted = m.draft_tokens or m.drafted_per_position
        return self.per_draft(self.increase(drafted)) if drafted and (m.drafts or m.drafted_per_position) else ""

    def measured(self) -> dict[str, str]:
        """Record name -> expression of every record read from the engine's own series alone (no setup, no
        schedule), in the order Prometheus evaluates them: what the watch reads."""
        found = {RUNNING_BATCH: self.running_batch()}
        if self.counted:
            found[DRAFTS] = self.drafts()
            found[COUNTER_RESETS] = self.resets()
        draft_length = self.draft_length()
        if draft_length:
            found[DRAFT_LENGTH] = draft_length
        running_k = self.running_k()
        if running_k:
            found[RUNNING_K] = running_k
        found[TOKENS] = self.tokens()
        if self.positional:
            found[AT_POSITION] = self.at_position()
            found[ACCEPTANCE] = self.acceptance()
        return found

    def per_draft(self, expr: str) -> str:
        """``expr`` per verification in the window, where there were any."""
        return f"{expr} / on ({self.by}) ({DRAFTS} > 0)"

    def running_k(self) -> str:
        """The draft length the engine runs, as it shows (``RulesMetrics.k_from``); empty where it does not."""
        m = self.metrics
        if m.k_from == "gauge":
            return f"max by ({self.by}) (avg_over_time({self.series(m.running_k)}[{self.window}]))"
        if m.k_from == "positions":
            return f"count by ({self.by}) (count by ({self.by}, {m.position_label}) ({self.series(m.per_position)}))"
        if m.k_from == "mean-draft-length":
            return DRAFT_LENGTH
        if m.k_from == "longest-draft":
            drafted = f"increase({self.series(m.drafted_per_position)}[{self.window}])"
            return f"count by ({self.by}) (sum by ({self.by}, {m.position_label}) ({drafted}) > 0)"
        return ""

    def tokens(self) -> str:
        """Tokens per verification: 1 + accepted per draft, generated per verify call, or the engine's mean."""
        m = self.metrics
        if m.accepted:
            return f"1 + {self.per_draft(self.increase(m.accepted))}"
        if m.per_position:
            return f"1 + {self.per_draft(self.increase(m.per_position))}"
        if m.verify_calls and m.generated:
            return self.per_draft(self.increase(m.generated))
        return f"avg by ({self.by}) (avg_over_time({self.series(m.accept_length)}[{self.window}]))"

    def at_position(self) -> str:
        """The share of drafts whose token at each position was accepted, by a label named ``position``."""
        position = self.metrics.position_label
        at_position = (
            f"{self.increase(self.metrics.per_position, by=f'{self.by}, {position}')}\n"
            f"  / on ({self.by}) group_left ()\n  ({DRAFTS} > 0)"
        )
        if position != "position":
            renamed = f'label_replace(\n  {at_position},\n  "position", "$1", "{position}", "(.*)")'
            at_position = f"sum without ({position}) ({renamed})"
        return at_position

    def acceptance(self) -> str:
        """p as the first-position share: accepted at position 0 over drafts (unbiased whatever the lengths)."""
        first = f'{self.metrics.position_label}="0"'
        return self.per_draft(self.increase(self.metrics.per_position, first))

    def p_from_tokens(self, priced: Sequence[int], k_max: int, schedule: Sequence[int]) -> str:
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


def scoped(expr: str, identity: str) -> str:
    """Every reference to a recorded series limited to one file's own (RULES_LABEL = identity)."""
    return _RECORDED.sub(lambda found: f'{found.group(1)}{{{RULES_LABEL}="{identity}"}}', expr)


def inlined(records: dict[str, str], name: str) -> str:
    """The expression of record ``name`` with every reference to another of ``records`` replaced by that
    record's own expression (so that Prometheus evaluates it where the rules are not loaded)."""

    def expand(found: re.Match[str]) -> str:
        referenced = found.group(1)
        return f"({inlined(records, referenced)})" if referenced in records and referenced != name else referenced

    return _RECORDED.sub(expand, records[name])
