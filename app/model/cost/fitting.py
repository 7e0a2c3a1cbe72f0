"""The published points priced by the cost model, and the protocol that fits its free terms to them.

The speedup at batch B is the closed form over the product's roofline (:mod:`app.model.cost.regimes`):

    S = L t(B, 1) / (k t_draft(B, w) + t(B, n) + cycle + cycle_per_sequence B)

with L the mean acceptance length (tokens per verification), n the tokens each sequence verifies (k + 1 for a
chain, the tree's draft tokens for a tree) and w the tokens each draft step proposes per sequence (the tree's
top-k, 1 for a chain).  The KV cache of every sequence is read at its context; a step over several devices adds
two all-reduces per layer.

Where a source gives no acceptance length, the sweep's first point (its smallest batch) sets the per-token
acceptance p, from which L follows at each point's k; that point then tests nothing and is not scored.

Accuracy is leave-one-source-out (:func:`leave_one_source_out`): for each source, the free terms are fitted on
every other source and that source's points are predicted.  The fit takes each speedup and, where a source
gives the baseline's own rate at several batches, how its plain step grows with the batch (GROWTH_WEIGHT).
Which terms are free is decided by :func:`select_terms`: a term enters only if it lowers that error, and a term
for one method or context regime only if it also leaves the worst point's error no higher.  The terms
fitted on every source are the product's defaults (``data/published_fit.json``, written by
``scripts/fit_published.py`` from :func:`fit_published`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.model import limits
from app.model.cost.presets import (
    ACCELERATORS,
    MODELS,
    WEIGHTS,
    ModelSpec,
    draft_head,
)
from app.model.cost.published import (
    COVERAGE,
    CROSSOVER_BATCHES,
    HEAD_OF_METHOD,
    MODEL_METHODS,
    PARALLEL_METHODS,
    SPARSE_METHODS,
    PublishedPoint,
    asked_class,
    covering,
    crossover_range,
    exclusion,
    interval_spread,
    load,
    point_class,
    source,
    sweeps,
)
from app.model.cost.regimes import (
    RooflineSetup,
    crossover_batch,
    model_step,
    payload_s,
    priced,
)

FloatArray = NDArray[np.float64]

# ---------------------------------------------------------------------------
# The terms and their pricing


TERM_NAMES: tuple[str, ...] = (
    "bandwidth_efficiency",
    "compute_efficiency",
    "overhead_us",
    "overhead_per_sequence_us",
    "overhead_per_draft_step_us",
    "cycle_overhead_us",
    "cycle_overhead_per_sequence_us",
    "allreduce_us",
)


# Ranges a fitted term may take: what the hardware makes plausible (HBM delivers up to about 90% of its peak;
# an all-reduce of a decoding step's activations over NVLink takes microseconds, not tens of them).
BOUNDS: dict[str, tuple[float, float]] = {
    "bandwidth_efficiency": (0.3, 0.9),
    "compute_efficiency": (0.1, 1.0),
    "overhead_us": (0.0, 2000.0),
    "overhead_per_sequence_us": (0.0, 200.0),
    "overhead_per_draft_step_us": (0.0, 2000.0),
    "cycle_overhead_us": (0.0, 5000.0),
    "cycle_overhead_per_sequence_us": (0.0, 200.0),
    "allreduce_us": (0.0, 20.0),
}


@dataclass(frozen=True)
class SpecCosts:
    """What the roofline's passes leave out (defaults: the product's, fitted to every published source)."""

    bandwidth_efficiency: float = limits.DEFAULT_BANDWIDTH_EFFICIENCY
    compute_efficiency: float = limits.DEFAULT_COMPUTE_EFFICIENCY
    overhead_us: float = limits.DEFAULT_OVERHEAD_US  # per target pass
    # per sequence of every pass, the draft's steps included: the engine's scheduling and sampling of each sequence
    overhead_per_sequence_us: float = limits.FITTED_TERMS["overhead_per_sequence_us"]
    # per draft step: launches and sampling
    overhead_per_draft_step_us: float = limits.FITTED_TERMS["overhead_per_draft_step_us"]
    # per speculative cycle: the draft's pass over accepted tokens, bookkeeping; then the same per sequence
    cycle_overhead_us: float = limits.FITTED_TERMS["cycle_overhead_us"]
    cycle_overhead_per_sequence_us: float = limits.FITTED_TERMS["cycle_overhead_per_sequence_us"]
    allreduce_us: float = limits.FITTED_TERMS["allreduce_us"]  # per all-reduce over the devices; two per layer per pass

    def terms(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in TERM_NAMES}


# The plain roofline: vendor peaks at fixed efficiencies, one overhead per pass (the draft's as the target's), no
# cycle or all-reduce time.  A term the protocol leaves out keeps this value.
PLAIN_ROOFLINE = SpecCosts(
    **limits.PLAIN_ROOFLINE_TERMS, overhead_per_draft_step_us=limits.PLAIN_ROOFLINE_TERMS["overhead_us"]
)


def _target(point: PublishedPoint) -> ModelSpec:
    return MODELS[point.target_preset or ""]


def _draft(point: PublishedPoint) -> ModelSpec | None:
    if point.draft_method in HEAD_OF_METHOD:
        return draft_head(_target(point), HEAD_OF_METHOD[point.draft_method], point.target_preset or "")
    if point.draft_method == "self-speculation-sparse-kv":
        return _target(point)
    if point.draft_method in MODEL_METHODS:
        return MODELS[point.draft_preset or ""]
    return None


def engine_batch(point: PublishedPoint, batches: Sequence[float] | FloatArray) -> FloatArray:
    """One engine's sequences at each of the point's batches: its share where ``replicas`` engines serve them (one
    where the batch is smaller than the engines: the others idle)."""
    return np.maximum(np.asarray(batches, dtype=np.float64) / (point.replicas or 1), 1.0)


def engine_devices(point: PublishedPoint) -> int:
    """The devices one engine runs over: its tensor parallelism, else every device the point names."""
    return point.tensor_parallel or point.devices or 1


def _context(point: PublishedPoint) -> int:
    """The point's context: as the source gives it (0 where nothing precedes the output), the default where not."""
    return limits.DEFAULT_CONTEXT if point.context is None else point.context


def setup_of(point: PublishedPoint, costs: SpecCosts) -> RooflineSetup:
    """The product's roofline setup for ``point`` priced with ``costs``."""
    draft = _draft(point) or _target(point)
    target_weights = WEIGHTS[point.weights or "bf16"]
    # a self-speculating draft is the target's own weights
    draft_weights = target_weights if draft is _target(point) else WEIGHTS[point.draft_weights or "bf16"]
    bare = RooflineSetup(
        ACCELERATORS[point.accelerator or ""],
        _target(point),
        draft,
        devices=engine_devices(point),
        target_bytes_per_param=target_weights.bytes_per_param,
        draft_bytes_per_param=draft_weights.bytes_per_param,
        context_tokens=_context(point),
        target_fp8=target_weights.fp8,
        draft_fp8=draft_weights.fp8,
        parallel_draft=point.draft_method in PARALLEL_METHODS,
    )
    return priced(bare, costs.terms())


@dataclass(frozen=True)
class Work:
    """What the points' passes read and compute, independent of the terms: one entry per (point, batch).

    Time of a pass = max(bytes / (bandwidth x efficiency), flops / (compute x efficiency)) + its overheads."""

    batch: FloatArray  # one engine's sequences
    draft_steps: FloatArray  # per cycle: k for a chain or a tree, 1 for a parallel draft
    bandwidth: FloatArray  # bytes/s, peak over the devices
    compute: FloatArray  # FLOP/s, peak over the devices
    plain_bytes: FloatArray
    plain_flops: FloatArray
    verify_bytes: FloatArray
    verify_flops: FloatArray
    draft_bytes: FloatArray
    draft_flops: FloatArray
    drafted: FloatArray  # 1 where a draft step runs a model, 0 for a lookup
    target_allreduces: FloatArray  # all-reduces per target pass (0 on one device)
    draft_allreduces: FloatArray
    plain_payload_s: FloatArray  # what a plain pass's all-reduces carry over the link, seconds (regimes.payload_s)
    verify_payload_s: FloatArray
    draft_payload_s: FloatArray

    def unit_speedup(self, costs: SpecCosts | Mapping[str, Any]) -> FloatArray:
        """The speedup at an acceptance length of 1 (multiply by L); each term a number or one per entry."""
        return self.unit_of(self.pass_times(costs))

    def unit_of(self, times: tuple[FloatArray, FloatArray, FloatArray, FloatArray]) -> FloatArray:
        """:meth:`unit_speedup` from pass times already computed (:meth:`pass_times`)."""
        plain, verify, draft, cycle = times
        result: FloatArray = plain / (self.draft_steps * draft + verify + cycle)
        return result

    def pass_times(self, costs: SpecCosts | Mapping[str, Any]) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Seconds of a plain step, a verification, a draft step and a cycle's own time."""
        term = costs.terms() if isinstance(costs, SpecCosts) else costs
        bandwidth = self.bandwidth * np.clip(term["bandwidth_efficiency"], 1e-3, 1.0)
        compute = self.compute * np.clip(term["compute_efficiency"], 1e-3, 1.0)
        per_pass = (term["overhead_us"] + term["overhead_per_sequence_us"] * self.batch) * 1e-6
        target_comm = self.target_allreduces * term["allreduce_us"] * 1e-6
        plain = np.maximum(self.plain_bytes / bandwidth, self.plain_flops / compute) + per_pass + target_comm
        verify = np.maximum(self.verify_bytes / bandwidth, self.verify_flops / compute) + per_pass + target_comm
        plain, verify = plain + self.plain_payload_s, verify + self.verify_payload_s
        draft = self.drafted * (
            np.maximum(self.draft_bytes / bandwidth, self.draft_flops / compute)
            + self.draft_payload_s
            + (
                term["overhead_per_draft_step_us"]
                + term["overhead_per_sequence_us"] * self.batch
                + self.draft_allreduces * term["allreduce_us"]
            )
            * 1e-6
        )
        cycle = (term["cycle_overhead_us"] + term["cycle_overhead_per_sequence_us"] * self.batch) * 1e-6
        return plain, verify, draft, cycle


def work(point: PublishedPoint, batches: Sequence[float] | FloatArray | None = None) -> Work:
    """The reads and arithmetic of ``point``'s passes at its batch (or at each of ``batches``)."""
    target = _target(point)
    draft = _draft(point)
    at = engine_batch(point, batches if batches is not None else [point.batch or 1])
    devices = engine_devices(point)
    accelerator = ACCELERATORS[point.accelerator or ""]
    context = _context(point)
    setup = setup_of(point, PLAIN_ROOFLINE)
    k = float(point.k or 0)
    verified, width, steps = k + 1.0, 1.0, k
    if setup.parallel_draft:
        width, steps = k, 1.0
    if point.tree and point.topk:
        width = float(point.topk)
        verified = float(point.num_draft_tokens or k * point.topk + 1)
    target_bytes = setup.target_bytes_per_param

    def reads(
        model: ModelSpec, bytes_per_param: float, tokens: float, cached: int, fp8: bool
    ) -> tuple[FloatArray, FloatArray]:
        """Bytes read, and FLOPs as the time they take at the BF16 rate: regimes.model_step's, at the cache of
        ``cached`` tokens."""
        at_cache = replace(setup, context_tokens=cached)
        step = model_step(at_cache, model, bytes_per_param, at, tokens, fp8=fp8)
        return step.bytes_read, step.compute_s * at_cache.compute_flops_s

    plain_bytes, plain_flops = reads(target, target_bytes, 1.0, context, setup.target_fp8)
    verify_bytes, verify_flops = reads(target, target_bytes, verified, context, setup.target_fp8)
    ones = np.ones_like(at)
    if draft is None:
        draft_bytes, draft_flops, drafted, draft_layers, draft_payload = 0 * at, 0 * at, 0 * at, 0, 0 * at
    else:
        cached = min(point.draft_kv_budget or context, context) if point.draft_method in SPARSE_METHODS else context
        draft_bytes, draft_flops = reads(draft, setup.draft_bytes_per_param, width, cached, setup.draft_fp8)
        drafted, draft_layers, draft_payload = ones, draft.layers, payload_s(setup, draft, at * width)
    multi = 1.0 if devices > 1 else 0.0
    return Work(
        batch=at,
        draft_steps=steps * ones,
        bandwidth=accelerator.bandwidth_tb_s * 1e12 * devices * ones,
        compute=accelerator.bf16_tflops * 1e12 * devices * ones,
        plain_bytes=plain_bytes,
        plain_flops=plain_flops,
        verify_bytes=verify_bytes,
        verify_flops=verify_flops,
        draft_bytes=draft_bytes,
        draft_flops=draft_flops,
        drafted=drafted,
        target_allreduces=2.0 * target.layers * multi * ones,
        draft_allreduces=2.0 * draft_layers * multi * ones,
        plain_payload_s=payload_s(setup, target, at),
        verify_payload_s=payload_s(setup, target, at * verified),
        draft_payload_s=draft_payload,
    )


def _stack(items: Sequence[Work]) -> Work:
    return Work(**{name.name: np.concatenate([getattr(item, name.name) for item in items]) for name in fields(Work)})


def acceptance_length(p: float, k: int) -> float:
    """Mean tokens per verification of a chain of k at per-token acceptance p: 1 + p + ... + p^k."""
    if p >= 1.0:
        return k + 1.0
    return (1.0 - p ** (k + 1)) / (1.0 - p)


def acceptance_of_length(length: float, k: int) -> float:
    """The per-token acceptance whose chain of k gives ``length`` tokens per verification (bisection)."""
    if length >= k + 1:
        return 1.0
    if length <= 1:
        return 0.0
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if acceptance_length(middle, k) < length else (low, middle)
    return (low + high) / 2


def predicted_speedup(point: PublishedPoint, costs: SpecCosts, acceptance: float, batch: float | None = None) -> float:
    """The cost model's speedup for ``point`` at acceptance length ``acceptance`` (at ``batch`` where given)."""
    if not point.priced:
        raise ValueError(f"{point.id}: the cost model cannot price this point ({exclusion(point)})")
    unit = work(point, None if batch is None else [batch]).unit_speedup(costs)
    return float(acceptance * unit[0])


# ---------------------------------------------------------------------------
# The dataset as one vectorised problem


def scopes(point: PublishedPoint) -> frozenset[str]:
    """The scopes a term learnt for part of the points may name: engine, method and context regime."""
    kind = point_class(point)
    return frozenset({f"engine={kind.engine}", f"method={kind.method}", f"context={kind.context}"})


@dataclass(frozen=True)
class Problem:
    """Every priced point, with what sets each sweep's acceptance."""

    points: tuple[PublishedPoint, ...]
    work: Work
    measured: FloatArray
    stated_length: FloatArray  # the source's acceptance length, nan where it gives none
    calibrator: tuple[int, ...]  # where the source gives none: the sweep's point that sets p
    ks: tuple[int, ...]
    sources: tuple[str, ...]
    step_s: FloatArray  # the baseline's own figure as one plain step's seconds (measured_step_s), nan where none
    # within each sweep with a step time at two batches or more: (point, the sweep's smallest batch with one)
    growth_pairs: tuple[tuple[int, int], ...] = ()

    @property
    def scored(self) -> NDArray[np.bool_]:
        """Points that test the model: all but those that set their sweep's acceptance."""
        return np.array(
            [not (math.isnan(self.stated_length[index]) and own == index) for index, own in enumerate(self.calibrator)]
        )

    def lengths(self, unit: FloatArray) -> FloatArray:
        """Each point's acceptance length: the source's, else from the p its sweep's calibrating point implies.

        A verification keeps at least its own token and at most k + 1, so the length a calibrating point implies is
        held to 1 to k + 1: a speedup below what one token per verification gives says the cost model is off
        there, not that fewer than one token was kept.  Only the depth (k, a tree's steps) tells points apart: a
        point at its calibrating point's depth takes that point's length whatever its top-k or draft tokens, and a
        point at another depth takes the per-token p that length implies, at its own depth, a tree counted as a chain
        of its depth.  So a deeper draft keeps more tokens per verification, as a deeper draft generally does; a wide
        tree may keep more than the chain it is counted as, which the sources that state no length cannot tell."""
        out = self.stated_length.copy()
        implied: dict[int, float] = {}
        for index, own in enumerate(self.calibrator):
            if not math.isnan(out[index]):
                continue
            length = min(max(float(self.measured[own] / unit[own]), 1.0), self.ks[own] + 1.0)
            if self.ks[index] == self.ks[own]:
                out[index] = length
                continue
            if own not in implied:
                implied[own] = acceptance_of_length(length, self.ks[own])
            out[index] = acceptance_length(implied[own], self.ks[index])
        return out

    def predict(self, costs: SpecCosts | Mapping[str, Any]) -> FloatArray:
        return self.predict_from(self.work.pass_times(costs))

    def predict_from(self, times: tuple[FloatArray, FloatArray, FloatArray, FloatArray]) -> FloatArray:
        """:meth:`predict` from pass times already computed (:meth:`Work.pass_times`)."""
        unit = self.work.unit_of(times)
        predicted: FloatArray = self.lengths(unit) * unit
        return predicted

    def growth_error(self, step: FloatArray, pairs: NDArray[np.int64]) -> FloatArray:
        """For each pair (point, its sweep's anchor): the plain step's predicted growth (``step``) over its measured
        growth, in log; what the fit trains on beside the speedups and the protocol scores out of source."""
        ratio: FloatArray = (step[pairs[:, 0]] / step[pairs[:, 1]]) * (
            self.step_s[pairs[:, 1]] / self.step_s[pairs[:, 0]]
        )
        return np.log(ratio)

    def mask(self, scope: str) -> FloatArray:
        return np.array([1.0 if scope in scopes(point) else 0.0 for point in self.points])


def problem(points: Sequence[PublishedPoint]) -> Problem:
    ordered: list[PublishedPoint] = []
    calibrator: list[int] = []
    steps: list[float] = []
    pairs: list[tuple[int, int]] = []
    for group in sweeps(point for point in points if point.priced).values():
        start = len(ordered)
        unstated = [index for index, point in enumerate(group) if point.acceptance_length is None]
        for index, point in enumerate(group):
            calibrator.append(start + unstated[0] if unstated else start + index)
            ordered.append(point)
            steps.append(measured_step_s(point) or math.nan)
        # the group is sorted by batch, so its first timed point is the growth's anchor
        timed = [start + index for index in range(len(group)) if not math.isnan(steps[start + index])]
        pairs += [(index, timed[0]) for index in timed if ordered[index].batch != ordered[timed[0]].batch]
    return Problem(
        points=tuple(ordered),
        work=_stack([work(point) for point in ordered]),
        measured=np.array([point.speedup or 1.0 for point in ordered]),
        stated_length=np.array(
            [point.acceptance_length if point.acceptance_length is not None else math.nan for point in ordered]
        ),
        calibrator=tuple(calibrator),
        ks=tuple(point.k or 0 for point in ordered),
        sources=tuple(source(point) for point in ordered),
        step_s=np.array(steps),
        growth_pairs=tuple(pairs),
    )


# ---------------------------------------------------------------------------
# Fitting


def split_term(name: str) -> tuple[str, str | None]:
    """``overhead_us@engine=SGLang`` -> (``overhead_us``, ``engine=SGLang``): a term learnt for one scope is added
    to the global one on the points (and requests) that name that scope."""
    base, _, scope = name.partition("@")
    return base, scope or None


def resolved(problem_: Problem, values: Mapping[str, float], start: SpecCosts = PLAIN_ROOFLINE) -> dict[str, Any]:
    """Each global term as a number, plus each scoped term on the points of its scope."""
    terms: dict[str, Any] = start.terms()
    for name, value in values.items():
        base, scope = split_term(name)
        if scope is None:
            terms[base] = value
    for name, value in values.items():
        base, scope = split_term(name)
        if scope is not None:
            low, high = BOUNDS[base]
            terms[base] = np.clip(terms[base] + value * problem_.mask(scope), low, high)
    return terms


def _bounds(name: str) -> tuple[float, float]:
    base, scope = split_term(name)
    low, high = BOUNDS[base]
    return (low, high) if scope is None else (low - high, high - low)


# The fit's weak pull toward the plain roofline, per term in units of its bounded range.  Where the training points
# leave a term undetermined (a held-out source may be the only one whose steps are compute-bound), the least squares
# alone stops wherever its path happened to lead, so that a difference in the last bit of the floating point moved
# the leave-one-source-out error by several points; with this pull such a term rests at the plain roofline's value,
# and a term the points determine moves by less than the rounding to three figures.
PRIOR_WEIGHT = 0.01


FIT_TOLERANCE = 1e-10


# Each sweep's measured growth of its plain step (Problem.growth_pairs) is fitted beside the speedups, one residual
# per pair weighted as one speedup: the speedups are ratios, which a time per sequence and a fixed time can trade
# against each other; how the baseline's own step grows with the batch says which.  Not tuned: 1 is the weight of
# every other measured ratio.
GROWTH_WEIGHT = 1.0


def source_weights(sources: Sequence[str]) -> FloatArray:
    """A weight for each item such that every source weighs as one (1 / its items), scaled to a mean of 1: a source
    that measured one setup at 200 batches and draft lengths is one publication, one machine and one way of
    measuring, and must not outvote twenty sources of a few points each."""
    if not sources:
        return np.zeros(0)
    _, inverse, counts = np.unique(np.array(sources), return_inverse=True, return_counts=True)
    weights: FloatArray = 1.0 / counts[inverse]
    scaled: FloatArray = weights * (len(weights) / float(weights.sum()))
    return scaled


def fit(problem_: Problem, free: Sequence[str], train: NDArray[np.bool_]) -> dict[str, float]:
    """The terms in ``free`` fitted on the ``train`` points: least squares of the log ratio of each speedup and of
    each sweep's plain-step growth (GROWTH_WEIGHT), within BOUNDS, with a weak pull (PRIOR_WEIGHT) toward the plain
    roofline so that the answer is unique where the points are silent."""
    from scipy.optimize import least_squares

    names = list(free)
    if not names:
        return {}
    lows = np.array([_bounds(name)[0] for name in names])
    highs = np.array([_bounds(name)[1] for name in names])
    plain = np.array([getattr(PLAIN_ROOFLINE, split_term(name)[0]) if "@" not in name else 0.0 for name in names])
    prior = (np.clip(plain, lows, highs) - lows) / (highs - lows)
    # a sweep's step times are its source's: fitted wherever the source is trained on, its acceptance-setting
    # point's too (that point's speedup tests nothing, but its baseline's step is measured like the others)
    trained = {problem_.sources[index] for index in np.flatnonzero(train)}
    pairs = np.array([pair for pair in problem_.growth_pairs if problem_.sources[pair[0]] in trained], dtype=np.int64)
    pairs = pairs.reshape(-1, 2)

    # every source weighs as one, in its speedups and in its step growth alike (source_weights)
    point_weight = np.sqrt(source_weights([problem_.sources[index] for index in np.flatnonzero(train)]))
    pair_weight = np.sqrt(source_weights([problem_.sources[index] for index in pairs[:, 0]]))

    def residuals(x: FloatArray) -> FloatArray:
        values = dict(zip(names, lows + x * (highs - lows), strict=True))
        times = problem_.work.pass_times(resolved(problem_, values))
        predicted = problem_.predict_from(times)
        growth = problem_.growth_error(times[0], pairs)
        result: FloatArray = np.concatenate(
            [
                point_weight * np.log(predicted[train] / problem_.measured[train]),
                PRIOR_WEIGHT * (x - prior),
                GROWTH_WEIGHT * pair_weight * growth,
            ]
        )
        return result

    best: tuple[float, FloatArray] | None = None
    for start in (prior, np.full(len(names), 0.5)):
        x0 = np.clip(start, 1e-6, 1 - 1e-6)
        result = least_squares(
            residuals,
            x0,
            bounds=(0.0, 1.0),
            method="trf",
            x_scale=1.0,
            xtol=FIT_TOLERANCE,
            ftol=FIT_TOLERANCE,
            gtol=FIT_TOLERANCE,
            max_nfev=2000,
        )
        if best is None or result.cost < best[0]:
            best = (float(result.cost), result.x)
    assert best is not None
    return {name: float(value) for name, value in zip(names, lows + best[1] * (highs - lows), strict=True)}


def rounded(values: Mapping[str, float]) -> dict[str, float]:
    """Three significant figures, as a link or an option writes them (0 below 0.01)."""
    return {name: float(f"{value:.3g}") if abs(value) >= 0.01 else 0.0 for name, value in values.items()}


@dataclass(frozen=True)
class Holdout:
    """Every scored point predicted by terms fitted on the other sources only, and each sweep's growth of its plain
    step (Problem.growth_pairs) by the same terms: what the fit trains on, each scored where it was left out."""

    predicted: FloatArray  # nan where not scored
    log_error: FloatArray  # predicted / measured, in log; nan where not scored
    terms: dict[str, dict[str, float]]  # per left-out source
    sources: tuple[str, ...]  # each point's source (Problem.sources)
    # per growth pair: the predicted growth over the measured, in log; nan where its source has no scored point
    growth_error: FloatArray = field(default_factory=lambda: np.zeros(0))
    growth_sources: tuple[str, ...] = ()  # each pair's source

    def summary(self, mask: NDArray[np.bool_] | None = None) -> tuple[int, float | None, float | None]:
        values = np.abs(self.log_error[~np.isnan(self.log_error)] if mask is None else self.log_error[mask])
        values = values[~np.isnan(values)]
        if values.size == 0:
            return 0, None, None
        return int(values.size), math.expm1(float(np.median(values))), math.expm1(float(values.max()))


def leave_one_source_out(problem_: Problem, free: Sequence[str]) -> Holdout:
    scored = problem_.scored
    sources = np.array(problem_.sources)
    predicted = np.full(len(problem_.points), np.nan)
    pairs = np.array(problem_.growth_pairs, dtype=np.int64).reshape(-1, 2)
    pair_sources = sources[pairs[:, 0]]
    growth = np.full(len(pairs), np.nan)
    per_source: dict[str, dict[str, float]] = {}
    for name in sorted(set(problem_.sources)):
        out = sources == name
        if not (scored & out).any():
            continue
        values = rounded(fit(problem_, free, scored & ~out))
        per_source[name] = values
        times = problem_.work.pass_times(resolved(problem_, values))
        guess = problem_.predict_from(times)
        predicted[out & scored] = guess[out & scored]
        own = pair_sources == name
        growth[own] = problem_.growth_error(times[0], pairs[own])
    return Holdout(
        predicted,
        np.log(predicted / problem_.measured),
        per_source,
        problem_.sources,
        growth,
        tuple(str(where) for where in pair_sources),
    )


def loss(holdout: Holdout) -> float:
    """What the protocol minimises: the mean absolute log error, left out by source, of what the fit trains on:
    every scored speedup and each sweep's growth of its plain step (weighted GROWTH_WEIGHT, as in the fit), each
    source weighing as one among the speedups and among the growths (source_weights).  A term that only mends the
    speedups at the price of the steps' growth, where sources measured it, is thus held to both, as the fit is."""
    scored = ~np.isnan(holdout.log_error)
    values = np.abs(holdout.log_error[scored])
    if not values.size:
        return math.inf
    weights = source_weights([holdout.sources[index] for index in np.flatnonzero(scored)])
    timed = ~np.isnan(holdout.growth_error)
    growth = GROWTH_WEIGHT * np.abs(holdout.growth_error[timed])
    growth_weights = source_weights([holdout.growth_sources[index] for index in np.flatnonzero(timed)])
    return float(np.concatenate([weights * values, growth_weights * growth]).mean())


def candidate_terms(problem_: Problem) -> list[str]:
    """Every global term, and each term scoped to a method or a context regime (SCOPE_KINDS) that at least two
    sources measured (so that leaving one out still leaves it identified)."""
    counts: dict[str, set[str]] = {}
    for point, where in zip(problem_.points, problem_.sources, strict=True):
        for scope in scopes(point):
            counts.setdefault(scope, set()).add(where)
    shared = sorted(scope for scope, names in counts.items() if len(names) >= 2 and scope.startswith(SCOPE_KINDS))
    scoped = [f"{name}@{scope}" for scope in shared for name in SCOPED_TERMS]
    return [*TERM_NAMES, *scoped]


# Terms that may be learnt for one method or context regime, which every request names.  Not for one engine: the
# batch answers (/batch, speedup-vs-batch, schedule) name none, so a term learnt for one could never apply there
# (on 40 points, most of them one engine's, the protocol once chose an SGLang-only time per sequence that left
# every other request without one).  ``name@engine=...`` still fits, for when requests carry their engine.
SCOPED_TERMS: tuple[str, ...] = TERM_NAMES


SCOPE_KINDS = ("method=", "context=")


MIN_GAIN = 0.002  # a term must lower the mean absolute log error by this much (0.2%) to enter


def worst(holdout: Holdout) -> float:
    """The largest |log error| of a scored speedup, left out by source: what a scoped term must not raise."""
    values = np.abs(holdout.log_error[~np.isnan(holdout.log_error)])
    return float(values.max()) if values.size else math.inf


@dataclass(frozen=True)
class Step:
    term: str
    loss_before: float
    loss_after: float


def select_terms(
    problem_: Problem, candidates: Sequence[str] | None = None, tried: dict[str, tuple[float, float]] | None = None
) -> tuple[list[str], list[Step]]:
    """The terms the leave-one-source-out error lets in, by two searches, the better kept: forward (from the plain
    roofline, add the term that lowers the error most while one lowers it by at least MIN_GAIN) and backward (from
    every global term, drop the one whose absence raises the error least while none raises it).  Either way each
    kept term lowers the error: without it the chosen set does worse.  The backward set is kept only where it beats the
    forward one by MIN_GAIN for each term it holds beyond it, the price each forward step paid: otherwise a
    hair's difference between two searches (0.1387 against 0.1396 once) swapped two terms for six and moved every
    default.

    Then the terms scoped to a method or a context regime, forward from the global ones: each must lower the error
    by MIN_GAIN and also leave the worst point's error no higher (:func:`worst`).  A scoped term is fitted on the
    few sources of its scope and answers for every request that names it, so that a gain in the mean bought by
    one setup's error is refused: the one such term the mean alone would take (a time per sequence for long
    contexts, 0.1569 to 0.1543 on the 38 sources) raises the worst point from 88% to 112%.  Returns the chosen
    terms and the search's steps; ``tried``, where given, gets each scoped term's error and worst |log error|
    beside the chosen terms in the last round (those refused, and the last one taken)."""
    pool = list(candidates if candidates is not None else candidate_terms(problem_))
    general, steps = _global_terms(problem_, [name for name in pool if "@" not in name])
    remaining = [name for name in pool if "@" in name]
    if not remaining:
        return general, steps
    chosen = list(general)
    held = leave_one_source_out(problem_, chosen)
    current, highest = loss(held), worst(held)
    while remaining:
        trials = {name: leave_one_source_out(problem_, [*chosen, name]) for name in remaining}
        if tried is not None:
            tried.clear()
            tried.update({name: (loss(trial), worst(trial)) for name, trial in trials.items()})
        admitted = {
            name: loss(trial)
            for name, trial in trials.items()
            if loss(trial) <= current - MIN_GAIN and worst(trial) <= highest
        }
        if not admitted:
            break
        name = min(admitted, key=lambda item: admitted[item])
        steps.append(Step(name, current, admitted[name]))
        chosen.append(name)
        remaining.remove(name)
        current, highest = admitted[name], worst(trials[name])
    return chosen, steps


def _global_terms(problem_: Problem, pool: Sequence[str]) -> tuple[list[str], list[Step]]:
    """The forward and backward searches of :func:`select_terms` over the global terms."""

    def error(terms: Sequence[str]) -> float:
        return loss(leave_one_source_out(problem_, terms))

    forward: list[str] = []
    forward_steps: list[Step] = []
    current = error(forward)
    remaining = list(pool)
    while remaining:
        trials = {name: error([*forward, name]) for name in remaining}
        name = min(trials, key=lambda item: trials[item])
        if trials[name] > current - MIN_GAIN:
            break
        forward_steps.append(Step(name, current, trials[name]))
        forward.append(name)
        remaining.remove(name)
        current = trials[name]
    forward_loss = current

    backward = list(pool)
    backward_steps: list[Step] = []
    current = error(backward)
    while backward:
        trials = {name: error([term for term in backward if term != name]) for name in backward}
        name = min(trials, key=lambda item: trials[item])
        if trials[name] > current:
            break
        backward_steps.append(Step(f"-{name}", current, trials[name]))
        backward.remove(name)
        current = trials[name]
    # every term the backward set holds beyond the forward one must earn MIN_GAIN, as each forward step did
    if current < forward_loss - MIN_GAIN * max(0, len(backward) - len(forward)):
        return backward, backward_steps
    return forward, forward_steps


def effects(problem_: Problem, chosen: Sequence[str]) -> dict[str, float]:
    """The leave-one-source-out error (mean absolute log) with each chosen term left out."""
    return {name: loss(leave_one_source_out(problem_, [term for term in chosen if term != name])) for name in chosen}


# ---------------------------------------------------------------------------
# What the fit on every source scores, written to published_fit.json


def interval_check(problem_: Problem, holdout: Holdout) -> dict[str, Any]:
    """The interval over every scored point (its half-width as a factor less one), and how the interval the answers
    state holds out of source: each point against the one its class gets from the other sources' errors alone."""
    errors = np.abs(holdout.log_error)
    scored = problem_.scored
    sources = np.array(problem_.sources)
    kinds = [point_class(point) for point in problem_.points]
    held = 0
    for index in np.flatnonzero(scored):
        others = scored & (sources != sources[index])
        asked = asked_class(kinds[index])
        mine = [errors[other] for other in np.flatnonzero(others) if asked.holds(kinds[other])]
        bound, _ = interval_spread(mine, errors[others])
        held += int(errors[index] <= bound)
    spread = covering(errors[scored])
    return {
        "coverage": COVERAGE,
        "spread": None if spread is None else _r(math.expm1(spread)),
        "points": int(scored.sum()),
        "held_out_of_source": held,
    }


def crossover_verdict(
    grid: Sequence[int], measured: int | None, predicted: int | None, interval: tuple[int | None, int | None]
) -> tuple[int | None, bool | None, bool | None]:
    """How a predicted crossover meets a sweep measured at the batches ``grid``, which stops paying at ``measured``.

    A sweep measures its crossover only to its own grid: after the last batch at which it still paid (0 where it
    never paid) and at or before ``measured``.  The prediction is within a factor of 2 where some batch in that
    range is, and the stated interval (the batches at which it holds 1; no end where it holds 1 to the last batch
    asked) is inside where it meets that range.  Returns (the batch before, within 2x, inside); all None where the
    sweep never stops paying."""
    if measured is None:
        return None, None, None
    after = [0, *grid][grid.index(measured)]
    low, high = interval
    within = predicted is not None and after / 2 < predicted <= 2 * measured
    inside = low is not None and low <= measured and (high is None or high > after)
    return after, within, inside


def sweep_curve(point: PublishedPoint, terms: Mapping[str, float], length: float) -> FloatArray:
    """The predicted speedup of ``point``'s setup over CROSSOVER_BATCHES at acceptance length ``length``."""
    single = problem([point])
    values = resolved(single, terms)
    scalar = {name: float(np.asarray(value).reshape(-1)[0]) for name, value in values.items()}
    curve: FloatArray = length * work(point, CROSSOVER_BATCHES).unit_speedup(scalar)
    return curve


# The baseline's own figure as the time of one plain step.  Speedups are ratios, so a fit to them alone could buy
# their accuracy with step times no engine has; where a source gives the baseline's rate of output tokens (or its
# time per output token), one plain step at batch B takes B / rate (1 / rate per sequence).  Rates over a whole run
# count its prefill too, which makes the measured step longer than the decode step.  The fit takes each sweep's
# growth of that step (GROWTH_WEIGHT), never its level: the level is a check the fit never sees.
STEP_TIME_UNITS: dict[str, str] = {
    **dict.fromkeys(("TPOT ms", "ms TPOT"), "ms per step"),
    **dict.fromkeys(("tok/s/user", "tokens/s/user"), "tokens/s per sequence"),
    **dict.fromkeys(
        (
            "tok/s",
            "t/s",
            "tokens/s",
            "output tok/s",
            "output tokens/s",
            "output toks/s",
            "decode tok/s",
            "decode tokens/s",
            "avg tok/s",
            "aggregate tok/s",
            "tokens/s (aggregate)",
            "tok/s (aggregate at C=16)",
        ),
        "tokens/s in all",
    ),
    "tok/s/GPU": "tokens/s per device",
}


# Each kind of figure as one plain step's seconds, from (value, batch, devices).
STEP_SECONDS: dict[str, Callable[[float, int, int], float]] = {
    "ms per step": lambda value, batch, devices: value / 1000,
    "tokens/s per sequence": lambda value, batch, devices: 1 / value,
    "tokens/s in all": lambda value, batch, devices: batch / value,
    "tokens/s per device": lambda value, batch, devices: batch / (value * devices),
}


STEP_CHECK_LARGE_BATCH = 17  # a batch past the small ones (1 to 16) most single-stream and latency sweeps stop at


def measured_step_s(point: PublishedPoint) -> float | None:
    """One plain step's seconds as the source's baseline figure gives it (STEP_TIME_UNITS); None where it does not."""
    kind = STEP_TIME_UNITS.get(point.value_unit or "")
    value, batch = point.baseline_value, point.batch
    if kind is None or not value or value <= 0 or batch is None:
        return None
    return STEP_SECONDS[kind](value, batch, point.devices or 1)


def step_time_check(problem_: Problem, costs: SpecCosts | Mapping[str, Any]) -> dict[str, Any]:
    """The plain step's predicted time against the measured one (:func:`measured_step_s`): how many points and
    sources, the median signed and absolute error, the same from STEP_CHECK_LARGE_BATCH sequences, and the growth
    of each sweep's step from its smallest batch to its largest, predicted over measured (free of a constant factor
    in the figure, as a unit read per device; not of a rate that counts prefill, which adds time per sequence).
    ``costs``' terms may be one per point (each source's own left-out fit)."""
    measured = problem_.step_s
    predicted = problem_.work.pass_times(costs)[0]
    read = ~np.isnan(measured)
    error = np.log(predicted / measured)

    def summary(mask: NDArray[np.bool_]) -> dict[str, Any]:
        values = error[mask]
        if values.size == 0:
            return {"points": 0, "median_error": None, "median_absolute_error": None}
        return {
            "points": int(values.size),
            "median_error": _r(math.expm1(float(np.median(values)))),
            "median_absolute_error": _r(math.expm1(float(np.median(np.abs(values))))),
        }

    large = read & (problem_.work.batch >= STEP_CHECK_LARGE_BATCH)
    last: dict[int, int] = {}  # each sweep's growth anchor (its smallest timed batch) -> its largest timed batch
    for index, anchor in problem_.growth_pairs:
        if anchor not in last or problem_.work.batch[index] > problem_.work.batch[last[anchor]]:
            last[anchor] = index
    # sweeps of one source over the same plain server (the same baseline at the same batches, several drafts or k)
    # measure one growth: it is stated once, under the first of them, with the others named beside it
    growth: dict[str, float] = {}
    shared: dict[str, list[str]] = {}
    first_of: dict[tuple[Any, ...], str] = {}  # (source, batches, measured steps) -> the sweep that states it
    for first, end in last.items():
        sweep = problem_.points[first].sweep
        ends = (first, end)
        key = (problem_.sources[first], *(float(problem_.work.batch[i]) for i in ends), *problem_.step_s[[*ends]])
        if key in first_of:
            shared.setdefault(first_of[key], []).append(sweep)
        else:
            first_of[key] = sweep
            growth[sweep] = round(math.exp(error[end] - error[first]), 4)
    return {
        **summary(read),
        "sources": len({problem_.sources[index] for index in np.flatnonzero(read)}),
        "large_batch": summary(large),
        "growth": growth,
        "growth_shared": shared,
    }


def out_of_source_terms(problem_: Problem, holdout: Holdout, every: Mapping[str, float]) -> dict[str, Any]:
    """Each term one value per point: the fit without that point's source (``every``'s where none was left out)."""
    per_point = [holdout.terms.get(name, every) for name in problem_.sources]  # every fit frees the same terms
    columns = {name: np.array([values[name] for values in per_point]) for name in every if "@" not in name}
    return resolved(problem_, {}) | columns


def fit_published(selection: tuple[list[str], list[Step]] | None = None) -> dict[str, Any]:
    """The content of ``published_fit.json``: the protocol's terms (``selection``, what :func:`select_terms` gave,
    where already run), their fit on every source, and what they score on each source left out."""
    points = load()
    problem_ = problem(points)
    chosen, steps = selection if selection is not None else select_terms(problem_)
    holdout = leave_one_source_out(problem_, chosen)
    terms = rounded(fit(problem_, chosen, problem_.scored))
    full = PLAIN_ROOFLINE.terms() | {name: value for name, value in terms.items() if "@" not in name}
    scoped = {name: value for name, value in terms.items() if "@" in name}
    scored = problem_.scored
    rows = []
    for index, point in enumerate(problem_.points):
        rows.append(
            {
                "id": point.id,
                "class": point_class(point).label,
                "predicted": None if not scored[index] else round(float(holdout.predicted[index]), 4),
                "sets_acceptance": not bool(scored[index]),
            }
        )
    classes: dict[str, dict[str, Any]] = {}
    kinds = [point_class(point) for point in problem_.points]
    labels = np.array([kind.label for kind in kinds])
    for label in sorted(set(labels)):
        count, median, worst = holdout.summary(scored & (labels == label))
        if count:
            classes[label] = {"points": count, "median_error": _r(median), "worst_error": _r(worst)}
    count, median, worst = holdout.summary(scored)
    every = holdout.log_error[scored]
    crossings = []
    for name, group in sweeps(problem_.points).items():
        if (
            len({point.batch for point in group}) < 3
            or problem_.sources[problem_.points.index(group[0])] not in holdout.terms
        ):
            continue
        first = problem_.points.index(group[0])
        terms_ = holdout.terms[problem_.sources[first]]
        unit = problem_.work.unit_speedup(resolved(problem_, terms_))
        length = float(problem_.lengths(unit)[first])
        curve = sweep_curve(group[0], terms_, length)
        asked = asked_class(point_class(group[0]))  # the interval /batch states for this setup
        held = np.array([asked.holds(kind) for kind in kinds])
        spread, _ = interval_spread(holdout.log_error[scored & held], every)
        measured = crossover_batch(
            np.array([point.batch or 0 for point in group]), np.array([point.speedup or 0.0 for point in group])
        )
        predicted = crossover_batch(CROSSOVER_BATCHES.astype(np.int64), curve)
        low, high = crossover_range(CROSSOVER_BATCHES, curve, spread)
        grid = sorted({point.batch or 0 for point in group})
        after, within, inside = crossover_verdict(grid, measured, predicted, (low, high))
        crossings.append(
            {
                "sweep": name,
                "batches": grid,
                "measured": measured,
                "measured_after": after,
                "predicted": predicted,
                "range": [low, high],
                "within_2x": within,
                "inside_range": inside,
                "predicted_inside_own_range": predicted is not None and predicted <= grid[-1],
            }
        )
    return {
        "protocol": {
            "candidates": candidate_terms(problem_),
            "chosen": chosen,
            "steps": [
                {"term": step.term, "loss_before": round(step.loss_before, 6), "loss_after": round(step.loss_after, 6)}
                for step in steps
            ],
            "min_gain": MIN_GAIN,
            "loss": round(loss(holdout), 6),
            "without": {name: round(value, 6) for name, value in effects(problem_, chosen).items()},
        },
        "terms": full,
        "scoped_terms": scoped,
        "leave_one_source_out": {
            "points": count,
            "sources": len({problem_.sources[index] for index in np.flatnonzero(scored)}),
            "median_error": _r(median),
            "worst_error": _r(worst),
            "classes": classes,
            "terms_by_source": holdout.terms,
        },
        "points": rows,
        "crossovers": crossings,
        "step_times": step_time_check(problem_, out_of_source_terms(problem_, holdout, terms)),
        "interval": interval_check(problem_, holdout),
    }


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
