"""What a sweep over draft length and batch size measured on a live engine: where speculation stops paying.

Input: for each cell (k, B) of the sweep, the totals of B requests decoded together on one server (k = 0 is
plain decoding), one :class:`~app.model.live.measure.Sample` per round.  The B requests of a cell decode in
lockstep, so per cell (the fastest round, the least disturbed of a shared machine):

- N decoding-phase tokens, A accepted draft tokens, G drafted tokens, T the requests' decode ms summed;
- steps = N - A: each step yields one token per sequence plus what it accepted;
- the step time tau = T / steps, the tokens a step yields per sequence y = N / steps and the tokens it sends
  through the target per sequence n = 1 + G / steps;
- the measured speedup S = (T / N at k = 0) / (T / N at k), at the same batch and round.

Prediction: the step time is the cost model of :mod:`app.model.cost.step_cost`, fitted over cells, and

    S_hat(k, B) = y_k t(B, 1) / t(B, n_k)

with y and n of that k from the cells the fit saw.  Out of sample only: ``predicted_speedup_holdout`` fits
without that cell, ``predicted_speedup_batch_holdout`` without any cell at that batch, and each k's predicted
crossover is fitted only on the batches below the measured one.  The in-sample ``predicted_speedup`` is
given beside them for the fit's own error.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.model.cost import step_cost
from app.model.cost.regimes import ScheduleStep, crossover_batch, schedule_from
from app.model.cost.step_cost import StepCost, StepCostError, StepPoint
from app.model.live.measure import MeasureError, Sample, check_sample
from app.model.live.rollout import SpeedupEstimate, speedup_estimate

MAX_BATCH = 256
MAX_PREDICTED_BATCH = 4096  # how far a predicted crossover is looked for


@dataclass(frozen=True)
class CellResult:
    k: int
    batch: int
    requests: int
    tokens: int
    steps: int
    step_ms: float  # per decoding step of the batch
    ms_per_token: float  # per sequence
    throughput_tokens_s: float  # all B sequences together
    tokens_per_step: float  # y: what one step yields per sequence
    tokens_verified_per_step: float  # n: what one step sends through the target per sequence
    drafts: int
    draft_tokens: int
    accepted: int
    profile: tuple[float, ...]
    tokens_per_verification: float | None
    measured_speedup: float | None  # None when plain decoding at this batch was not measured
    speedup_rounds: tuple[float, ...]  # the measured speedup of each round taken alone
    predicted_step_ms: float | None
    predicted_step_ms_holdout: float | None
    predicted_speedup: float | None  # in sample: the fit saw this cell
    predicted_speedup_holdout: float | None  # leave-one-out
    predicted_speedup_batch_holdout: float | None  # leave this batch out
    # terms the fit on every cell identifies and the fit without this batch cannot (term -> why): that prediction
    # prices them at 0 (at batch 1, the one-token pass of plain decoding, which no other batch measures)
    batch_holdout_kept: dict[str, str] = field(default_factory=dict)
    # the same terms where they were given (an earlier fit of this engine and hardware): that prediction holds them
    # at the given value
    batch_holdout_given: dict[str, str] = field(default_factory=dict)
    # end to end, prompts included: plain's wall-clock time per output token over this cell's (measured_speedup is
    # the decoding phase's, time per output token after the first, which the crossover refers to)
    measured_speedup_end_to_end: float | None = None
    # the 95% interval of the speedup over the rounds (Student t on their log ratios, around their geometric
    # mean): how far the measurement would move on a rerun; None with fewer than two rounds
    measured_speedup_low: float | None = None
    measured_speedup_high: float | None = None


@dataclass(frozen=True)
class Crossover:
    k: int
    measured: int | None  # the first batch of the grid from which S <= 1 to its end; None: pays at the largest
    predicted: int | None  # from the fit on the batches below the measured crossover; None: pays to 4096
    fitted_on: tuple[int, ...]
    in_measured_interval: bool | None  # predicted within (the grid batch before the measured one, measured]
    note: str | None = None


@dataclass(frozen=True)
class HoldoutError:
    kind: str  # "leave-one-out" or "leave-one-batch-out"
    cells: int
    median_abs_error: float | None  # |predicted / measured - 1| of the speedup
    max_abs_error: float | None


@dataclass(frozen=True)
class BatchAnalysis:
    batches: list[int]
    ks: list[int]
    draft_model: bool
    cells: list[CellResult]
    step_cost: StepCost
    crossovers: list[Crossover]
    best_k_measured: dict[int, int]
    best_k_predicted: dict[int, int]
    holdout_errors: list[HoldoutError]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Cell:
    sample: Sample
    steps: int
    step_ms: float
    y: float
    n: float


def _cell(sample: Sample) -> _Cell:
    steps = sample.tokens - sample.accepted
    return _Cell(
        sample,
        steps,
        sample.decode_ms / steps,
        sample.tokens / steps,
        1.0 + sample.draft_tokens / steps,
    )


def _fit(cells: Sequence[_Cell], draft_model: bool, given: Mapping[str, float] | None) -> StepCost | None:
    points = [StepPoint(cell.sample.batch, cell.n, cell.step_ms) for cell in cells]
    try:
        return step_cost.fit(points, draft_model, given)
    except StepCostError:
        return None


def _acceptance(cells: Sequence[_Cell], k: int) -> tuple[float, float] | None:
    """(y, n) of draft length k pooled over ``cells``: steps-weighted, as the totals would give."""
    mine = [cell for cell in cells if cell.sample.k == k]
    steps = sum(cell.steps for cell in mine)
    if not steps:
        return None
    tokens = sum(cell.sample.tokens for cell in mine)
    drafted = sum(cell.sample.draft_tokens for cell in mine)
    return tokens / steps, 1.0 + drafted / steps


def _predict(cost: StepCost | None, cells: Sequence[_Cell], k: int, batch: int) -> float | None:
    if cost is None:
        return None
    if k == 0:
        return 1.0
    pooled = _acceptance(cells, k)
    if pooled is None:
        return None
    value = float(cost.speedup(batch, *pooled))
    return value if math.isfinite(value) and value > 0 else None


def _lost(full: StepCost, fitted: StepCost | None, given: bool = False) -> dict[str, str]:
    """The terms ``full`` identified that ``fitted`` kept at 0 (or with ``given``, held as given), with the reason."""
    if fitted is None:
        return {}
    return {name: why for name, why in (fitted.given if given else fitted.kept).items() if name in full.fitted}


def _rounds_check(rounds: Sequence[Sequence[Sample]]) -> dict[tuple[int, int], list[Sample]]:
    by_cell: dict[tuple[int, int], list[Sample]] = {}
    for number, samples in enumerate(rounds):
        seen: set[tuple[int, int]] = set()
        for sample in samples:
            check_sample(sample)
            if not 1 <= sample.batch <= MAX_BATCH:
                raise MeasureError(f"k = {sample.k}: batch must be from 1 to {MAX_BATCH}; got {sample.batch}")
            key = (sample.k, sample.batch)
            if key in seen:
                raise MeasureError(f"round {number + 1}: k = {sample.k} at batch {sample.batch} measured twice")
            seen.add(key)
            by_cell.setdefault(key, []).append(sample)
    if not by_cell:
        raise MeasureError("no measurements")
    return by_cell


def _holdout_error(kind: str, pairs: list[tuple[float, float]]) -> HoldoutError:
    errors = [abs(predicted / measured - 1.0) for predicted, measured in pairs]
    return HoldoutError(
        kind,
        len(errors),
        statistics.median(errors) if errors else None,
        max(errors) if errors else None,
    )


def analyze_batches(
    rounds: Sequence[Sequence[Sample]], draft_model: bool, given: Mapping[str, float] | None = None
) -> BatchAnalysis:
    """Per cell the measured and predicted speedup, the fitted step cost, and each k's crossover batch.

    ``given``: step-cost terms from an earlier fit of the same engine and hardware, held by any fit here that
    cannot identify them (see :func:`app.model.cost.step_cost.fit`)."""
    by_cell = _rounds_check(rounds)
    batches = sorted({batch for _k, batch in by_cell})
    ks = sorted({k for k, _batch in by_cell})
    notes: list[str] = []
    if 0 not in ks:
        raise MeasureError("plain decoding (k = 0) was not measured: it is the baseline of every batch's speedup")
    chosen = {key: _cell(min(samples, key=lambda sample: sample.decode_ms)) for key, samples in by_cell.items()}
    for (k, batch), cell in chosen.items():
        if k > 0 and cell.sample.drafts == 0:
            notes.append(f"k = {k} at batch {batch}: no draft was verified")
    cells = list(chosen.values())
    full = _fit(cells, draft_model, given)
    if full is None:
        raise MeasureError("the step times cannot be fitted")

    def measured_speedup(k: int, batch: int, sample: Sample) -> float | None:
        plain = chosen.get((0, batch))
        if plain is None:
            return None
        return (plain.sample.decode_ms / plain.sample.tokens) / (sample.decode_ms / sample.tokens)

    # end to end, each cell's least disturbed round of its own: the round whose decoding was fastest need not be
    # the one whose prompts and first tokens were (a slow spell before the first token touches only the wall clock)
    wall_per_token = {
        key: min(sample.wall_ms / sample.generated for sample in samples if sample.wall_ms and sample.generated)
        for key, samples in by_cell.items()
        if any(sample.wall_ms and sample.generated for sample in samples)
    }

    def end_to_end(k: int, batch: int) -> float | None:
        plain, mine = wall_per_token.get((0, batch)), wall_per_token.get((k, batch))
        return None if plain is None or mine is None else plain / mine

    def per_round(k: int, batch: int) -> SpeedupEstimate:
        """Each round's speedup taken alone (plain's time per token over this cell's, round by round)."""
        paired = list(zip(by_cell.get((0, batch), []), by_cell[(k, batch)], strict=False))
        plain = [base.decode_ms / base.tokens for base, _sample in paired]
        mine = [sample.decode_ms / sample.tokens for _base, sample in paired]
        return speedup_estimate(plain, mine, min_intervals=2)

    results: list[CellResult] = []
    loo: list[tuple[float, float]] = []
    lobo: list[tuple[float, float]] = []
    batch_fits = {batch: _fit([c for c in cells if c.sample.batch != batch], draft_model, given) for batch in batches}
    for (k, batch), cell in sorted(chosen.items(), key=lambda item: (item[0][1], item[0][0])):
        sample = cell.sample
        others = [other for other in cells if other is not cell]
        left_out = _fit(others, draft_model, given) if len(others) >= 2 else None
        batch_others = [other for other in cells if other.sample.batch != batch]
        measured = measured_speedup(k, batch, sample)
        spread = per_round(k, batch)
        holdout = _predict(left_out, others, k, batch)
        batch_holdout = _predict(batch_fits[batch], batch_others, k, batch)
        if k > 0 and measured is not None:
            if holdout is not None:
                loo.append((holdout, measured))
            if batch_holdout is not None:
                lobo.append((batch_holdout, measured))
        results.append(
            CellResult(
                k=k,
                batch=batch,
                requests=sample.requests,
                tokens=sample.tokens,
                steps=cell.steps,
                step_ms=cell.step_ms,
                ms_per_token=sample.decode_ms / sample.tokens,
                throughput_tokens_s=batch * 1e3 * sample.tokens / sample.decode_ms,
                tokens_per_step=cell.y,
                tokens_verified_per_step=cell.n,
                drafts=sample.drafts,
                draft_tokens=sample.draft_tokens,
                accepted=sample.accepted,
                profile=tuple(count / sample.drafts for count in sample.accepted_per_position) if sample.drafts else (),
                tokens_per_verification=1.0 + sample.accepted / sample.drafts if sample.drafts else None,
                measured_speedup=measured,
                speedup_rounds=spread.ratios,
                predicted_step_ms=float(full.step_ms(batch, cell.n)),
                predicted_step_ms_holdout=float(left_out.step_ms(batch, cell.n)) if left_out else None,
                predicted_speedup=_predict(full, cells, k, batch),
                predicted_speedup_holdout=holdout,
                predicted_speedup_batch_holdout=batch_holdout,
                batch_holdout_kept=_lost(full, batch_fits[batch]),
                batch_holdout_given=_lost(full, batch_fits[batch], given=True),
                measured_speedup_end_to_end=end_to_end(k, batch),
                measured_speedup_low=spread.low,
                measured_speedup_high=spread.high,
            )
        )

    crossovers = [_crossover(k, batches, results, cells, draft_model, given) for k in ks if k > 0]
    best_measured: dict[int, int] = {}
    best_predicted: dict[int, int] = {}
    for batch in batches:
        here = [result for result in results if result.batch == batch]
        timed = [result for result in here if result.measured_speedup is not None]
        if timed:
            best_measured[batch] = max(timed, key=lambda result: (result.measured_speedup or 0.0, -result.k)).k
        predicted = [result for result in here if result.predicted_speedup_batch_holdout is not None]
        if predicted:
            best_predicted[batch] = max(
                predicted, key=lambda result: (result.predicted_speedup_batch_holdout or 0.0, -result.k)
            ).k
    if full.kept:
        notes += [f"{step_cost.TERM_LABELS[name]} kept at 0: {why}" for name, why in full.kept.items()]
    notes += [
        f"{step_cost.TERM_LABELS[name]} held at the given {getattr(full, name):.3g} ms: {why}"
        for name, why in full.given.items()
    ]
    return BatchAnalysis(
        batches=batches,
        ks=ks,
        draft_model=draft_model,
        cells=results,
        step_cost=full,
        crossovers=crossovers,
        best_k_measured=best_measured,
        best_k_predicted=best_predicted,
        holdout_errors=[_holdout_error("leave-one-out", loo), _holdout_error("leave-one-batch-out", lobo)],
        notes=notes,
    )


def _crossover(
    k: int,
    batches: list[int],
    results: list[CellResult],
    cells: list[_Cell],
    draft_model: bool,
    given: Mapping[str, float] | None,
) -> Crossover:
    mine = {result.batch: result for result in results if result.k == k and result.measured_speedup is not None}
    grid = [batch for batch in batches if batch in mine]
    if not grid:
        return Crossover(k, None, None, (), None, "no batch with both plain and speculative decoding measured")
    measured = crossover_batch(np.array(grid), np.array([mine[batch].measured_speedup for batch in grid]))
    below = [batch for batch in grid if measured is None or batch < measured]
    if len(below) < 2:
        if not below:
            note = f"no batch below the smallest measured ({grid[0]}) to fit on"
        elif measured is None:
            note = f"one batch measured ({below[0]}): too few to fit how the cost grows"
        else:
            note = f"one batch below the measured crossover ({below[0]}): too few to fit how the cost grows"
        return Crossover(k, measured, None, tuple(below), None, note)
    fitted_cells = [cell for cell in cells if cell.sample.batch in below]
    cost = _fit(fitted_cells, draft_model, given)
    pooled = _acceptance(fitted_cells, k)
    if cost is None or pooled is None:
        return Crossover(k, measured, None, tuple(below), None, "the batches below cannot be fitted")
    every = np.arange(1, MAX_PREDICTED_BATCH + 1)
    predicted = crossover_batch(every, cost.speedup(every, *pooled))
    if measured is None:
        inside = predicted is None or predicted > grid[-1]
    else:
        before = max((batch for batch in grid if batch < measured), default=0)
        inside = predicted is not None and before < predicted <= measured
    return Crossover(k, measured, predicted, tuple(below), inside)


def measured_schedule(analysis: BatchAnalysis) -> tuple[list[int], list[ScheduleStep]]:
    """The schedule the sweep measured, over batch 1..the largest measured: each batch runs the best k measured
    at the nearest measured batch at or above it, so that speculation is off from just past the last measured
    batch where it paid (a batch between two measured ones is not interpolated).  Returns the k per batch and
    its steps, each step's speedups the measured ones at those grid batches."""
    grid = sorted(analysis.best_k_measured)
    if not grid:
        return [], []
    speedup = {
        (cell.k, cell.batch): cell.measured_speedup for cell in analysis.cells if cell.measured_speedup is not None
    }
    best_k: list[int] = []
    best_speedup: list[float] = []
    for batch in range(1, grid[-1] + 1):
        at = next(measured for measured in grid if measured >= batch)
        k = analysis.best_k_measured[at]
        best_k.append(k)
        best_speedup.append(speedup.get((k, at)) or 1.0)
    batches = np.arange(1, grid[-1] + 1, dtype=np.int64)
    return best_k, schedule_from(batches, np.array(best_k), np.array(best_speedup))


def batch_step_times_csv(analysis: BatchAnalysis) -> str:
    """``batch,tokens,draft_steps,ms`` for ``specdec-lab step-fit``: every cell's measured step.

    ``tokens`` is what a step sends through the target per sequence (a mean, 1 + drafted tokens); with a draft
    model ``draft_steps`` is its passes per step (the step's time then holds them), 0 for n-gram lookup."""
    rows = ["batch,tokens,draft_steps,ms"]
    for cell in analysis.cells:
        steps = round(cell.tokens_verified_per_step - 1.0) if analysis.draft_model else 0
        rows.append(f"{cell.batch},{cell.tokens_verified_per_step:.6f},{steps},{cell.step_ms:.6f}")
    return "\n".join(rows) + "\n"
