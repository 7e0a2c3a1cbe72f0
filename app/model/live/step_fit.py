"""Fit the roofline's efficiencies and per-pass overhead to measured step times.

A measured row is either one target pass over ``tokens`` tokens per sequence at a batch, or one
speculative cycle: ``draft_steps`` draft passes (each over ``draft_width`` tokens per sequence) and a
verification pass over ``tokens`` tokens.  With bandwidth efficiency e_b, compute efficiency e_c and
overhead o per pass, a pass takes max(M / e_b, F / e_c) + o where M and F are its bytes and FLOPs over
the peak figures; a row is the sum of its passes.  The fit minimises the squared relative error over a
log-spaced grid of (e_b, e_c), refined around the best cell, with o solved in closed form at each point.

The same rows also fit the named terms of :mod:`app.model.cost.step_cost` (fixed, per sequence, per further
token, per draft step), which need no hardware figures: ``StepFit.step_cost``.

Formats read: a CSV of ``batch, tokens, ms`` (tokens may be a mean over steps; an optional ``draft_steps``
column makes a row a cycle of that many draft passes and the verification, as ``measure --batch`` writes
for a draft model), and each engine's own files of step times, read by its package
(STEP_TIMES in ``app/model/engines/<engine>/reports.py``, listed by :func:`app.model.engines.step_time_formats`).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, replace

import numpy as np

from app.model import engines, limits
from app.model.cost import step_cost as named_terms
from app.model.cost.regimes import RooflineSetup, model_step, payload_s
from app.model.cost.step_cost import StepCost, StepPoint
from app.model.engines.step_times import MAX_ROWS, StepFitError, StepRow, step_row

MAX_OVERHEAD_US = limits.MAX_OVERHEAD_US
EFFICIENCY_FLOOR = 0.01
GRID = 48
GRID_CHUNK = 64

__all__ = ["StepFit", "StepFitError", "StepRow", "fit_step_times", "read_step_times"]


@dataclass(frozen=True)
class StepFit:
    format: str
    rows: list[StepRow]
    bandwidth_efficiency: float
    compute_efficiency: float
    overhead_us: float
    fitted_ms: list[float]
    rms_relative_error: float
    max_relative_error: float
    at_bounds: list[str]
    setup: RooflineSetup
    step_cost: StepCost | None = None  # the named terms, where the rows identify any
    # out of sample: each batch's rows predicted by the fit to the other batches (median absolute relative error)
    holdout_error: float | None = None
    holdout_folds: int = 0  # the batches left out in turn (0: one batch size only, nothing to hold out)


def _csv_rows(text: str) -> list[StepRow]:
    reader = csv.DictReader(io.StringIO(text.strip()))
    fields = {name.strip().lower(): name for name in reader.fieldnames or []}
    aliases = {
        "batch": ("batch", "batch_size"),
        "tokens": ("tokens", "tokens_per_sequence", "n"),
        "ms": ("ms", "time_ms", "milliseconds", "step_ms"),
    }
    chosen = {}
    for key, names in aliases.items():
        found = next((fields[name] for name in names if name in fields), None)
        if found is None:
            raise StepFitError(f"the CSV needs a {key} column (one of {', '.join(names)}); got {', '.join(fields)}")
        chosen[key] = found
    draft_column = fields.get("draft_steps")
    rows = []
    for number, record in enumerate(reader, start=2):
        try:
            values = {key: float(record[name]) for key, name in chosen.items()}
            draft_steps = float(record[draft_column] or 0) if draft_column else 0.0
        except (TypeError, ValueError):
            raise StepFitError(f"line {number}: batch, tokens, ms and draft_steps must be numbers") from None
        if not draft_steps.is_integer():
            raise StepFitError(f"line {number}: draft_steps must be a whole number; got {draft_steps:g}")
        where = f"line {number}"
        rows.append(step_row(values["batch"], values["tokens"], values["ms"], where, draft_steps=int(draft_steps)))
        if len(rows) > MAX_ROWS:
            raise StepFitError(f"more than {MAX_ROWS:,} rows")
    return rows


def read_step_times(text: str) -> tuple[str, list[StepRow]]:
    stripped = text.strip()
    if not stripped:
        files = ", ".join(sorted({engines.adapter(item.engine).TITLE for item in engines.step_time_formats()}))
        raise StepFitError(f"no step times: give a CSV (batch, tokens, ms) or a file of step times from {files}")
    if stripped[0] in "[{":
        try:
            payload = json.loads(stripped)
        except json.JSONDecodeError:
            try:
                payload = [json.loads(line) for line in stripped.splitlines() if line.strip()]
            except json.JSONDecodeError as error:
                raise StepFitError(f"the JSON does not parse ({error.msg})") from None
        found = engines.step_time_formats()
        chosen = next((item for item in found if not item.fallback and item.detect(payload)), None)
        chosen = chosen or next((item for item in found if item.fallback and item.detect(payload)), None)
        if chosen is None:
            named = ", ".join(f"{item.description}" for item in found)
            raise StepFitError(f"the JSON is in neither of the formats of step times the engines write: {named}")
        rows, name = chosen.read(payload), chosen.name
    else:
        rows, name = _csv_rows(stripped), "csv"
    if len(rows) > MAX_ROWS:
        raise StepFitError(f"more than {MAX_ROWS:,} rows")
    if len(rows) < 3:
        raise StepFitError(f"{len(rows)} rows: at least 3 are needed to fit three parameters")
    return name, rows


def _components(setup: RooflineSetup, rows: list[StepRow]) -> tuple[np.ndarray, ...]:
    """Per row: target and draft passes' bytes and FLOPs in seconds at efficiency 1, passes per row, and what the
    passes' all-reduces carry over the link (regimes.payload_s): known, so the fitted terms do not absorb it and
    the fitted setup, which prices it again, does not count it twice."""
    unit = replace(setup, bandwidth_efficiency=1.0, compute_efficiency=1.0, step_overhead_us=0.0)
    batch = np.array([row.batch for row in rows], dtype=np.float64)
    tokens = np.array([row.tokens for row in rows], dtype=np.float64)
    width = np.array([row.draft_width for row in rows], dtype=np.float64)
    steps = np.array([row.draft_steps for row in rows], dtype=np.float64)
    target = model_step(unit, unit.target, unit.target_bytes_per_param, batch, tokens, fp8=unit.target_fp8)
    draft = model_step(unit, unit.draft, unit.draft_bytes_per_param, batch, width, fp8=unit.draft_fp8)
    carried = payload_s(unit, unit.target, batch * tokens) + steps * payload_s(unit, unit.draft, batch * width)
    return target.memory_s, target.compute_s, draft.memory_s, draft.compute_s, steps, carried


def _predict(parts: tuple[np.ndarray, ...], eb: np.ndarray, ec: np.ndarray) -> np.ndarray:
    tm, tc, dm, dc, steps, carried = parts
    target = np.maximum(tm[None, :] / eb[:, None], tc[None, :] / ec[:, None])
    draft = np.maximum(dm[None, :] / eb[:, None], dc[None, :] / ec[:, None])
    result: np.ndarray = target + steps[None, :] * draft + carried[None, :]
    return result


HOLDOUT_ROWS = 200  # rows the out-of-sample check refits on (evenly spaced over a longer input): bounded work
HOLDOUT_FOLDS = 8  # at most this many batches left out in turn


def holdout_error(setup: RooflineSetup, rows: list[StepRow]) -> tuple[float | None, int]:
    """Leave one batch out: fit the efficiencies and overhead to the other batches' rows, predict the left-out
    batch's.  Returns the median absolute relative error over the predicted rows and the batches left out in turn
    (None and 0 with fewer than two batch sizes, or too few rows to fit without one)."""
    if len(rows) > HOLDOUT_ROWS:
        rows = [rows[round(index * (len(rows) - 1) / (HOLDOUT_ROWS - 1))] for index in range(HOLDOUT_ROWS)]
    batches = sorted({row.batch for row in rows})
    if len(batches) > HOLDOUT_FOLDS:
        batches = [batches[round(index * (len(batches) - 1) / (HOLDOUT_FOLDS - 1))] for index in range(HOLDOUT_FOLDS)]
    errors: list[float] = []
    folds = 0
    for batch in batches:
        train = [row for row in rows if row.batch != batch]
        test = [row for row in rows if row.batch == batch]
        if len(train) < 3:
            continue
        fit = _fit(setup, train)
        parts = _components(setup, test)
        predicted = _predict(parts, np.array([fit[0]]), np.array([fit[1]]))[0] + fit[2] * (parts[4] + 1.0)
        measured = np.array([row.ms for row in test]) * 1e-3
        errors.extend(np.abs(predicted / measured - 1.0).tolist())
        folds += 1
    if folds < 2:
        return None, 0
    return float(np.median(errors)), folds


def fit_step_times(setup: RooflineSetup, format_name: str, rows: list[StepRow]) -> StepFit:
    eb, ec, overhead = _fit(setup, rows)
    return _fitted(setup, format_name, rows, eb, ec, overhead)


def _fit(setup: RooflineSetup, rows: list[StepRow]) -> tuple[float, float, float]:
    """Bandwidth and compute efficiency and the overhead per pass (seconds) that fit the rows best."""
    parts = _components(setup, rows)
    measured = np.array([row.ms for row in rows]) * 1e-3
    passes = parts[4] + 1.0
    weight = 1.0 / measured
    cap = MAX_OVERHEAD_US * 1e-6

    def best_on(eb_values: np.ndarray, ec_values: np.ndarray) -> tuple[float, float, float, float]:
        eb_all, ec_all = (grid.ravel() for grid in np.meshgrid(eb_values, ec_values, indexing="ij"))
        best = (0.0, 0.0, 0.0, math.inf)
        a = passes * weight
        for start in range(0, eb_all.size, GRID_CHUNK):  # bounded memory: GRID_CHUNK x rows at a time
            eb, ec = eb_all[start : start + GRID_CHUNK], ec_all[start : start + GRID_CHUNK]
            predicted = _predict(parts, eb, ec)
            # o minimising sum(((predicted + passes o - measured) / measured)^2), kept within [0, cap]
            overhead = np.clip(((measured - predicted) * weight) @ a / float(a @ a), 0.0, cap)
            total = (((predicted + overhead[:, None] * passes - measured) * weight) ** 2).sum(axis=1)
            index = int(np.argmin(total))
            if total[index] < best[3]:
                best = (float(eb[index]), float(ec[index]), float(overhead[index]), float(total[index]))
        return best

    levels = np.geomspace(EFFICIENCY_FLOOR, 1.0, GRID)
    eb, ec, overhead, _ = best_on(levels, levels)
    for _ in range(3):  # refine around the best cell
        span = levels[1] / levels[0]
        levels_b = np.clip(np.geomspace(eb / span, eb * span, 17), EFFICIENCY_FLOOR, 1.0)
        levels_c = np.clip(np.geomspace(ec / span, ec * span, 17), EFFICIENCY_FLOOR, 1.0)
        eb, ec, overhead, _ = best_on(levels_b, levels_c)
        levels = levels_b
    return eb, ec, overhead


def _fitted(
    setup: RooflineSetup, format_name: str, rows: list[StepRow], eb: float, ec: float, overhead: float
) -> StepFit:
    parts = _components(setup, rows)
    measured = np.array([row.ms for row in rows]) * 1e-3
    passes = parts[4] + 1.0
    cap = MAX_OVERHEAD_US * 1e-6
    fitted = _predict(parts, np.array([eb]), np.array([ec]))[0] + overhead * passes
    relative = (fitted - measured) / measured
    at_bounds = [
        name
        for name, value, low, high in (
            ("bandwidth_efficiency", eb, EFFICIENCY_FLOOR, 1.0),
            ("compute_efficiency", ec, EFFICIENCY_FLOOR, 1.0),
            ("overhead_us", overhead, 0.0, cap),
        )
        if math.isclose(value, low, rel_tol=1e-6, abs_tol=1e-12) or math.isclose(value, high, rel_tol=1e-6)
    ]
    fitted_setup = replace(
        setup,
        bandwidth_efficiency=eb,
        compute_efficiency=ec,
        step_overhead_us=overhead * 1e6,
        overhead_per_draft_step_us=None,  # the fit gives draft and target passes one overhead
        # measured steps hold the cycle's own time and the all-reduces' latency: the fitted overhead carries them, so
        # the defaults' terms for them (fitted to published measurements) would count them twice; what the
        # all-reduces carry over the link was a known term of the fit and stays priced
        overhead_per_sequence_us=0.0,
        cycle_overhead_us=0.0,
        cycle_overhead_per_sequence_us=0.0,
        allreduce_us=0.0,
    )
    terms = named_terms.fit(
        [StepPoint(row.batch, row.tokens, row.ms) for row in rows], draft_model=any(row.draft_steps for row in rows)
    )
    held, folds = holdout_error(setup, rows)
    return StepFit(
        format=format_name,
        rows=rows,
        bandwidth_efficiency=eb,
        compute_efficiency=ec,
        overhead_us=overhead * 1e6,
        fitted_ms=[float(value) * 1e3 for value in fitted],
        rms_relative_error=float(np.sqrt(np.mean(relative**2))),
        max_relative_error=float(np.max(np.abs(relative))),
        at_bounds=at_bounds,
        setup=fitted_setup,
        step_cost=terms,
        holdout_error=held,
        holdout_folds=folds,
    )
