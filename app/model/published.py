"""Published measurements of speculative decoding's speedup, and what the cost model predicts for each.

The points are in ``data/published_speedups.json``, each with its source (paper, post, pull request or
issue) and where in it.  A point can be priced when its accelerator and target are presets, its draft is a
method whose cost follows from the target's shape or is nearly nothing, and it names k and the batch:

- ``eagle``, ``eagle2``, ``eagle3``, ``mtp``: a head on the target, priced from its shape by
  :func:`app.model.presets.draft_head` (one layer, a fusion layer and an LM head), once per draft step;
- ``ngram``: a lookup in the context, priced at zero.

The speedup at batch B is the closed form over the product's roofline (:class:`RooflineSetup`) with the
terms of :class:`SpecCosts`:

    S = L t(B, 1) / (k t_draft(B, w) + t(B, n) + cycle + cycle_per_sequence B)

with L the mean acceptance length (tokens per verification), n the tokens each sequence verifies (k + 1 for
a chain, the tree's draft tokens for a tree) and w the tokens each draft step proposes per sequence (the
tree's top-k, 1 for a chain).  A step over several devices adds two all-reduces per layer.

The terms fitted to the points :func:`split` does not hold out (it splits by source; ``data/published_fit.json``)
are the product's defaults (:data:`app.model.limits.FITTED_TERMS`); :data:`PLAIN_ROOFLINE` is the roofline
without them.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from app.model import limits
from app.model.presets import ACCELERATORS, MODELS, draft_head
from app.model.regimes import RooflineSetup, crossover_batch, cycle_overhead_s, model_step, target_step

DATA = Path(__file__).with_name("data") / "published_speedups.json"
HEAD_METHODS = ("eagle", "eagle2", "eagle3", "mtp")
PRICED_METHODS = (*HEAD_METHODS, "ngram")
WEIGHT_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5}  # bytes per stored parameter of the target
METHOD_NAMES = {"eagle": "EAGLE", "eagle2": "EAGLE-2", "eagle3": "EAGLE-3", "mtp": "MTP", "ngram": "n-gram lookup"}


@dataclass(frozen=True)
class PublishedPoint:
    id: str
    sweep: str
    citation: str
    url: str
    location: str
    hardware: str | None
    accelerator: str | None
    devices: int | None
    tensor_parallel: int | None
    engine: str | None
    engine_version: str | None
    target: str | None
    target_preset: str | None
    weights: str | None  # the target's weight format where not bf16 (presets.WEIGHT_FORMATS)
    draft_method: str
    draft: str | None
    draft_preset: str | None  # a separate draft model's preset
    k: int | None
    tree: bool | None
    topk: int | None
    num_draft_tokens: int | None  # a tree's verified tokens (SGLang's num_draft_tokens)
    batch: int | None
    batch_kind: str
    qps: float | None
    context: int | None
    output_len: int | None
    dataset: str | None
    acceptance_length: float | None
    acceptance_definition: str | None
    speedup: float | None
    speedup_kind: str | None
    baseline_value: float | None
    spec_value: float | None
    value_unit: str | None
    lossless: bool
    notes: str | None

    @property
    def priced(self) -> bool:
        """Whether the cost model can price this point (see the module)."""
        return (
            self.accelerator in ACCELERATORS
            and self.target_preset in MODELS
            and (
                self.draft_method in PRICED_METHODS or (self.draft_method == "draft-model" and bool(self.draft_preset))
            )
            and self.k is not None
            and self.batch is not None
            and self.speedup is not None
            and self.lossless
        )


@cache
def load() -> tuple[PublishedPoint, ...]:
    payload: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    names = {field.name for field in fields(PublishedPoint)}
    return tuple(PublishedPoint(**{name: item.get(name) for name in names}) for item in payload["points"])


def sweeps(points: Sequence[PublishedPoint]) -> dict[str, list[PublishedPoint]]:
    """Points by sweep, each sorted by batch."""
    grouped: dict[str, list[PublishedPoint]] = {}
    for point in points:
        grouped.setdefault(point.sweep, []).append(point)
    return {name: sorted(group, key=lambda point: point.batch or 0) for name, group in grouped.items()}


@dataclass(frozen=True)
class SpecCosts:
    """What the roofline's passes leave out, each fitted or given (defaults: the product's, fitted to these points)."""

    bandwidth_efficiency: float = limits.DEFAULT_BANDWIDTH_EFFICIENCY
    compute_efficiency: float = limits.DEFAULT_COMPUTE_EFFICIENCY
    overhead_us: float = limits.DEFAULT_OVERHEAD_US  # per target pass
    # per sequence of every target pass: the engine's scheduling, sampling and output handling of each sequence
    overhead_per_sequence_us: float = limits.FITTED_TERMS["overhead_per_sequence_us"]
    # per draft step: launches and sampling
    overhead_per_draft_step_us: float = limits.FITTED_TERMS["overhead_per_draft_step_us"]
    # per speculative cycle: the draft's pass over accepted tokens, bookkeeping; then the same per sequence
    cycle_overhead_us: float = limits.FITTED_TERMS["cycle_overhead_us"]
    cycle_overhead_per_sequence_us: float = limits.FITTED_TERMS["cycle_overhead_per_sequence_us"]
    allreduce_us: float = limits.FITTED_TERMS["allreduce_us"]  # per all-reduce over the devices; two per layer per pass

    def as_vector(self) -> list[float]:
        return [getattr(self, field.name) for field in fields(self)]

    @classmethod
    def from_vector(cls, values: Sequence[float]) -> SpecCosts:
        return cls(**{field.name: float(value) for field, value in zip(fields(cls), values, strict=True)})


# the roofline as it shipped before the fit: a draft step's overhead is a pass's
PLAIN_ROOFLINE = SpecCosts(
    **limits.PLAIN_ROOFLINE_TERMS, overhead_per_draft_step_us=limits.PLAIN_ROOFLINE_TERMS["overhead_us"]
)


def _setup(point: PublishedPoint, costs: SpecCosts) -> RooflineSetup:
    target = MODELS[point.target_preset or ""]
    draft = (
        draft_head(target, point.draft_method, point.target_preset or "")
        if point.draft_method in HEAD_METHODS
        else target
    )
    return RooflineSetup(
        ACCELERATORS[point.accelerator or ""],
        target,
        draft,
        devices=point.tensor_parallel or point.devices or 1,
        target_bytes_per_param=WEIGHT_BYTES.get(point.weights or "bf16", 2.0),
        context_tokens=point.context or limits.DEFAULT_CONTEXT,
        bandwidth_efficiency=min(max(costs.bandwidth_efficiency, 1e-3), 1.0),
        compute_efficiency=min(max(costs.compute_efficiency, 1e-3), 1.0),
        step_overhead_us=costs.overhead_us,
        overhead_per_sequence_us=costs.overhead_per_sequence_us,
        overhead_per_draft_step_us=costs.overhead_per_draft_step_us,
        cycle_overhead_us=costs.cycle_overhead_us,
        cycle_overhead_per_sequence_us=costs.cycle_overhead_per_sequence_us,
        allreduce_us=costs.allreduce_us,
    )


def predicted_speedup(
    point: PublishedPoint, costs: SpecCosts, acceptance_length: float, batch: float | None = None
) -> float:
    """The cost model's speedup for ``point`` (at ``batch`` instead of its own, where given)."""
    if not point.priced:
        raise ValueError(f"{point.id}: the cost model cannot price this point")
    setup = _setup(point, costs)
    at = float(batch if batch is not None else point.batch or 1)
    k = point.k or 0
    verified = k + 1.0
    width = 1.0
    if point.tree and point.topk:
        width = float(point.topk)
        verified = float(point.num_draft_tokens or k * point.topk + 1)
    plain = float(target_step(setup, at, 1.0).total_s)
    verify = float(target_step(setup, at, verified).total_s)
    draft = 0.0
    if point.draft_method != "ngram":
        step = model_step(setup, setup.draft, setup.draft_bytes_per_param, at, width, setup.draft_step_overhead_us)
        draft = float(step.total_s)
    cycle = float(cycle_overhead_s(setup, at))
    return float(acceptance_length * plain / (k * draft + verify + cycle))


@dataclass(frozen=True)
class PointPrediction:
    point: PublishedPoint
    acceptance_length: float
    acceptance_from: str  # "source" or "calibrated on <id>"
    predicted: float
    train: bool

    @property
    def ratio(self) -> float:
        return self.predicted / (self.point.speedup or 1.0)


def acceptance_for(sweep: Sequence[PublishedPoint], costs: SpecCosts) -> tuple[float, str, str | None]:
    """The sweep's acceptance length: the source's, or the one that makes its smallest batch come out right.

    Returns (length, where it came from, the id of the point used to calibrate it or None)."""
    first = sweep[0]
    if first.acceptance_length is not None:
        return first.acceptance_length, "source", None
    unit = predicted_speedup(first, costs, 1.0)
    return (first.speedup or 1.0) / unit, f"calibrated on {first.id}", first.id


def predict_all(points: Sequence[PublishedPoint], costs: SpecCosts, train_ids: set[str]) -> list[PointPrediction]:
    out = []
    for group in sweeps([point for point in points if point.priced]).values():
        length, where, used = acceptance_for(group, costs)
        for point in group:
            if point.id == used:
                continue
            own = point.acceptance_length if point.acceptance_length is not None else length
            source = "source" if point.acceptance_length is not None else where
            out.append(PointPrediction(point, own, source, predicted_speedup(point, costs, own), point.id in train_ids))
    return out


def source(point: PublishedPoint) -> str:
    """The publication a point comes from (its address without the fragment): a paper, a post, a pull request."""
    return point.url.split("#", 1)[0]


def _spread(items: Sequence[PublishedPoint], count: int) -> list[PublishedPoint]:
    """``count`` of ``items`` evenly spaced over them, the first and the last included."""
    if count <= 0:
        return []
    if count == 1:
        return [items[len(items) // 2]]
    return [items[round(index * (len(items) - 1) / (count - 1))] for index in range(count)]


def split(points: Sequence[PublishedPoint]) -> set[str]:
    """The fitting half, stratified by source.

    Each sweep offers every other point by batch for holding out (the first after calibration fits, as does a
    sweep's only point).  A source then holds out no more of its offered points than all the other sources
    together, so that no one publication is the majority of the held-out points; a capped source holds out
    points spread over its sweeps and batches, and the rest of its points fit.  Returns the fitting points' ids.
    """
    predicted: dict[str, list[PublishedPoint]] = {}
    offered: dict[str, list[list[PublishedPoint]]] = {}
    for group in sweeps([point for point in points if point.priced]).values():
        rest = group[1:] if group[0].acceptance_length is None else group
        predicted.setdefault(source(group[0]), []).extend(rest)
        offered.setdefault(source(group[0]), []).append(rest[1::2])
    counts = {name: sum(map(len, lists)) for name, lists in offered.items()}
    held: set[str] = set()
    for name, lists in offered.items():
        allowed = min(counts[name], sum(counts.values()) - counts[name])
        # the capped source's share split evenly over its sweeps, each sweep's spread over its batches
        share = [allowed // len(lists) + (index < allowed % len(lists)) for index in range(len(lists))]
        for items, count in zip(lists, share, strict=True):
            held.update(point.id for point in _spread(items, min(count, len(items))))
    return {point.id for items in predicted.values() for point in items} - held


def errors(predictions: Sequence[PointPrediction]) -> tuple[float | None, float | None]:
    values = [abs(math.log(item.ratio)) for item in predictions]
    if not values:
        return None, None
    return math.expm1(statistics.median(values)), math.expm1(max(values))


def crossover(group: Sequence[PublishedPoint], costs: SpecCosts, length: float) -> tuple[int | None, int | None]:
    """(measured, predicted) batch from which the sweep stops paying, over its own batches and 1..4096."""
    batches = np.array([point.batch or 0 for point in group])
    measured = crossover_batch(batches, np.array([point.speedup or 0.0 for point in group]))
    every = np.arange(1, 4097)
    curve = np.array([predicted_speedup(group[0], costs, length, batch=float(b)) for b in every])
    return measured, crossover_batch(every, curve)


# Ranges a fitted term may take: what the hardware makes plausible (HBM delivers up to about 90% of its peak;
# an all-reduce of a decoding step's activations over NVLink takes microseconds, not tens of them), so that
# the few published points cannot buy a better fit with an implausible term.
BOUNDS: dict[str, tuple[float, float]] = {
    "bandwidth_efficiency": (0.2, 0.9),
    "compute_efficiency": (0.05, 1.0),
    "overhead_us": (0.0, 500.0),
    "overhead_per_sequence_us": (0.0, 500.0),
    "overhead_per_draft_step_us": (0.0, 500.0),
    "cycle_overhead_us": (0.0, 10_000.0),
    "cycle_overhead_per_sequence_us": (0.0, 500.0),
    "allreduce_us": (0.0, 20.0),
}


def fitted(points: Sequence[PublishedPoint], start: SpecCosts, train_ids: set[str], free: Sequence[str]) -> SpecCosts:
    """The terms named in ``free`` fitted on the training points (least squares of the log ratio, within BOUNDS)."""
    from scipy.optimize import minimize

    names = list(free)

    def costs_of(x: np.ndarray) -> SpecCosts:
        return replace(start, **{name: float(value) for name, value in zip(names, x, strict=True)})

    def loss(x: np.ndarray) -> float:
        chosen = [item for item in predict_all(points, costs_of(x), train_ids) if item.train]
        return float(sum(math.log(item.ratio) ** 2 for item in chosen))

    x0 = np.array([getattr(start, name) for name in names], dtype=float)
    result = minimize(
        loss,
        x0,
        method="Powell",
        bounds=[BOUNDS[name] for name in names],
        options={"maxiter": 20_000, "xtol": 1e-4, "ftol": 1e-10},
    )
    return costs_of(result.x)


@dataclass(frozen=True)
class Accuracy:
    """How far the shipped defaults (the fitted terms) are from the published points none of which fitted them."""

    points: int  # held out
    setups: int  # the sweeps they come from
    median_error: float | None
    worst_error: float | None
    crossover_sweep: str | None  # a published batch sweep that stops paying
    crossover_setup: str | None  # what it measured, in words
    crossover_measured: int | None
    crossover_predicted: int | None
    measured_hardware: tuple[str, ...]  # accelerator presets with a priced published point

    @property
    def sentence(self) -> str:
        """What every answer from the defaults says about them."""
        return (
            f"defaults: fitted to published measurements, median error {self.median_error or 0:.0%} / worst "
            f"{self.worst_error or 0:.0%} on {self.points} held-out published points"
        )


@cache
def shipped_accuracy() -> Accuracy:
    """The defaults against the points held out of their fit (each sweep's smallest batch calibrates its
    acceptance where the source gives none)."""
    points = load()
    costs = SpecCosts()
    fitted_on = set(published_fit()["fitted_on"])
    predictions = [item for item in predict_all(points, costs, fitted_on) if not item.train]
    median, worst = errors(predictions)
    crossing: tuple[str | None, int | None, int | None] = (None, None, None)
    described = None
    for name, group in sweeps([point for point in points if point.priced]).items():
        if len({point.batch for point in group}) < 3:
            continue
        length, _where, _used = acceptance_for(group, costs)
        measured, predicted = crossover(group, costs, length)
        if measured is not None and crossing[0] is None:
            crossing = (name, measured, predicted)
            first = group[0]
            method = METHOD_NAMES.get(first.draft_method, first.draft_method)
            described = f"{method} on {first.engine}, {first.devices or 1} × {first.hardware}"
    return Accuracy(
        points=len(predictions),
        setups=len({item.point.sweep for item in predictions}),
        median_error=median,
        worst_error=worst,
        crossover_sweep=crossing[0],
        crossover_setup=described,
        crossover_measured=crossing[1],
        crossover_predicted=crossing[2],
        measured_hardware=tuple(sorted({point.accelerator or "" for point in points if point.priced})),
    )


# The terms fitted on every other priced point of each sweep, as scripts/fit_published.py writes them
FIT = limits.PUBLISHED_FIT
FREE_TERMS: tuple[str, ...] = (
    "bandwidth_efficiency",
    "compute_efficiency",
    "overhead_us",
    "overhead_per_sequence_us",
    "overhead_per_draft_step_us",
    "cycle_overhead_us",
    "cycle_overhead_per_sequence_us",
    "allreduce_us",
)
# The fit starts from the plain roofline (not from the defaults it writes, so that a refit gives the same terms)
FIT_START = replace(PLAIN_ROOFLINE, cycle_overhead_us=100.0, cycle_overhead_per_sequence_us=10.0, allreduce_us=10.0)


def fit_published() -> dict[str, Any]:
    """The fit and what it scores on the points it did not see (the content of ``published_fit.json``)."""
    points = load()
    train = split(points)
    found = fitted(points, FIT_START, train, FREE_TERMS)
    # three significant figures, as a link or an option writes them; the errors are those of the rounded terms
    terms = {name: float(f"{value:.3g}") if (value := getattr(found, name)) >= 0.01 else 0.0 for name in FREE_TERMS}
    costs = replace(found, **terms)
    held_out = [item for item in predict_all(points, costs, train) if not item.train]
    median, worst = errors(held_out)
    return {
        "terms": terms,
        "fitted_on": sorted(train),
        "held_out": {
            "points": len(held_out),
            "median_error": round(median or 0.0, 6),
            "worst_error": round(worst or 0.0, 6),
        },
    }


@cache
def published_fit() -> dict[str, Any]:
    fit: dict[str, Any] = json.loads(FIT.read_text(encoding="utf-8"))
    return fit
