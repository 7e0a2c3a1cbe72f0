"""Published measurements of speculative decoding's speedup, and what the product states about its own error.

The points are in ``data/published_speedups.json``, each with its source (paper, post, pull request or issue),
the place in it and, for what was added or corrected later, a short quote.  A point is priced when its source
names the accelerator, the target, the draft, k and the batch, all of them presets here
(:func:`exclusion` says what is missing otherwise).  The draft is

- ``eagle``, ``eagle2``, ``eagle3``, ``mtp``: a head on the target, priced from its shape by
  :func:`app.model.cost.presets.draft_head` (one layer, a fusion layer and an LM head), once per draft step;
- ``draft-model``: a separate model (``draft_preset``), a pass of its own per draft step;
- ``draft-model-sparse-kv`` and ``self-speculation-sparse-kv``: a separate model, or the target itself, reading
  only ``draft_kv_budget`` tokens of each sequence's cache (StreamingLLM-style, as MagicDec does);
- ``ngram``: a lookup in the context, priced at zero.

How the points are priced and the terms fitted, by a protocol scored out of source, is
:mod:`app.model.cost.fitting`; what it wrote is ``data/published_fit.json`` (:func:`published_fit`).  Here: the
points, the classes a statement of accuracy is about, the interval of a predicted speedup and the batches where
it contains 1, and the accuracy every answer states (:func:`accuracy_for`).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.model import limits
from app.model.cost.presets import (
    ACCELERATOR_FAMILIES,
    ACCELERATORS,
    DRAFT_HEADS,
    MODELS,
    WEIGHTS,
    device_preset,
)
from app.model.cost.regimes import (
    RooflineSetup,
)

FloatArray = NDArray[np.float64]


DATA = Path(__file__).parents[1] / "data" / "published_speedups.json"


FIT = limits.PUBLISHED_FIT


# The methods whose draft is a head on the target, each with the head that prices it (presets.DRAFT_HEADS).
HEAD_OF_METHOD: dict[str, str] = {
    "eagle": "eagle",
    "eagle2": "eagle",
    "eagle3": "eagle3",
    "mtp": "mtp",
    "parallel-draft": "p-eagle",
}
HEAD_METHODS = tuple(method for method, head in HEAD_OF_METHOD.items() if not DRAFT_HEADS[head].parallel)


MODEL_METHODS = ("draft-model", "draft-model-sparse-kv")


SPARSE_METHODS = ("draft-model-sparse-kv", "self-speculation-sparse-kv")


# Parallel drafting (P-EAGLE) proposes all k tokens in one pass of its head: one draft step k wide.
PARALLEL_METHODS = tuple(method for method, head in HEAD_OF_METHOD.items() if DRAFT_HEADS[head].parallel)


PRICED_METHODS = (*HEAD_METHODS, *MODEL_METHODS, "self-speculation-sparse-kv", "ngram", *PARALLEL_METHODS)


# Drafts not priced: relaxed acceptance has no cost model here (its output is not the target's); a block-diffusion
# drafter (DFlash) drafts its block in one pass, as a parallel draft is priced (RooflineSetup.parallel_draft), but of
# a model of its own whose shape its sources do not give.
BLOCK_METHODS = ("block-diffusion",)
UNPRICED_METHODS = ("mtp-relaxed", *BLOCK_METHODS)


METHODS = (*PRICED_METHODS, *UNPRICED_METHODS)


LONG_CONTEXT = 8000  # tokens from which a point's context is long: the KV read rivals the weights' at batch 8


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
    weights: str | None  # the target's weight format where not bf16 (WEIGHTS)
    draft_method: str
    draft: str | None
    draft_preset: str | None  # a separate draft model's preset
    draft_kv_budget: int | None  # tokens of each sequence's cache a sparse-KV draft reads
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
    quote: str | None = None  # the source's own words for the figure or for a field filled in later
    draft_weights: str | None = None  # the draft's weight format where not bf16 (WEIGHTS)
    # What a serving run held, where its logs state it; recorded, not priced (the README's "tried and not entered":
    # a prefill timed in the run and a cache that holds fewer sequences than the concurrency).  The mean prompt
    # tokens of each request (with output_len, the mean tokens generated), and the tokens the speculative and the
    # plain server's KV caches hold.
    prompt_len: int | None = None
    kv_cache_tokens: int | None = None
    baseline_kv_cache_tokens: int | None = None
    # Engines that share the batch behind a balancer, each over tensor_parallel devices: each runs batch / replicas
    # sequences (one where the batch is smaller than the replicas); null for one engine.
    replicas: int | None = None

    @property
    def priced(self) -> bool:
        """Whether the cost model can price this point (:func:`exclusion` says why not)."""
        return exclusion(self) is None

    @property
    def source(self) -> str:
        return source(self)


def exclusion_reasons(point: PublishedPoint) -> list[tuple[str, str]]:
    """Why the cost model cannot price ``point``: (what is missing, in a few words that group points, and the
    reason in words); empty when it can."""
    reasons: list[tuple[str, str]] = []
    if point.speedup is None:
        reasons.append(("no speedup given", "the source gives no speedup for it"))
    if not point.lossless:
        reasons.append(
            (
                "relaxed acceptance",
                "relaxed acceptance changes the output, so its speedup is not speculative decoding's",
            )
        )
    if point.draft_method in BLOCK_METHODS:
        reasons.append(
            (
                "a block drafter's shape not given",
                "a block drafter drafts in one pass, as a parallel draft is priced, but the source does not give its "
                "drafter's shape",
            )
        )
    elif point.draft_method not in PRICED_METHODS:
        reasons.append(
            ("a draft method with no cost model", f"its draft method ({point.draft_method}) has no cost model here")
        )
    for given in (point.weights, point.draft_weights):
        if given is not None and given not in WEIGHTS:
            reasons.append(("a weight format with no byte count", f"no byte count for its weight format ({given})"))
    if point.accelerator is None:
        reasons.append(
            ("accelerator not named", "the source does not name its accelerator")
            if point.hardware is None
            else ("an accelerator with no preset", f"no preset for {point.hardware}")
        )
    if point.target_preset is None:
        reasons.append(
            ("target not named", "the source does not name its target")
            if point.target is None
            else ("a target with no preset", f"no preset for {point.target}")
        )
    if point.draft_method in MODEL_METHODS and point.draft_preset is None:
        reasons.append(
            ("a draft model with no preset", f"no preset for its draft model ({point.draft or 'not named'})")
        )
    if point.draft_method in SPARSE_METHODS and point.draft_kv_budget is None:
        reasons.append(
            ("the cache its draft reads not given", "the source does not say how much of the cache its draft reads")
        )
    if point.k is None:
        reasons.append(("k not given", "the source does not give k"))
    if point.tree and point.topk is None:
        reasons.append(("a tree's top-k not given", "the source does not give its tree's top-k"))
    if point.batch is None:
        reasons.append(
            ("a request rate, not a batch", f"the source gives a request rate ({point.qps:g} per second), not a batch")
            if point.qps is not None
            else ("batch not given", "the source does not give the batch")
        )
    return reasons


def exclusion(point: PublishedPoint) -> str | None:
    """Why the cost model cannot price ``point``, in words; None when it can."""
    return "; ".join(words for _, words in exclusion_reasons(point)) or None


def exclusion_counts(points: Iterable[PublishedPoint]) -> list[tuple[str, int, int]]:
    """What keeps points from being priced: (what is missing, the points it keeps out, those it alone keeps out),
    most first; a point may lack several things, and one that lacks only this would be priced with it."""
    counts: dict[str, list[int]] = {}
    for point in points:
        kinds = dict(exclusion_reasons(point))
        for kind in kinds:
            counted = counts.setdefault(kind, [0, 0])
            counted[0] += 1
            counted[1] += len(kinds) == 1
    return sorted(((kind, n, alone) for kind, (n, alone) in counts.items()), key=lambda item: (-item[1], item[0]))


def problems(point: PublishedPoint) -> list[tuple[str, str]]:
    """Fields of a dataset entry that are missing or contradict each other: (field, what is wrong)."""
    found: list[tuple[str, str]] = []
    if not point.citation or not point.location or not point.url.startswith("https://"):
        found.append(("url", "every point names its source, the place in it and an https address"))
    if point.draft_method not in METHODS:
        found.append(("draft_method", f"{point.draft_method!r} is not one of {', '.join(METHODS)}"))
    if point.batch_kind not in ("batch", "concurrency", "qps"):
        found.append(("batch_kind", f"{point.batch_kind!r} is not batch, concurrency or qps"))
    if point.qps is not None and point.batch_kind != "qps":
        found.append(("qps", f"a request rate on a point measured by {point.batch_kind}"))
    if point.batch is not None and point.batch < 1:
        found.append(("batch", "at least 1"))
    if point.context is not None and point.context < 0:
        found.append(("context", "at least 0 (0: nothing precedes the output)"))
    if point.k is not None and not 1 <= point.k <= 64:
        found.append(("k", "from 1 to 64"))
    if point.accelerator is not None and point.accelerator not in ACCELERATORS:
        found.append(("accelerator", f"{point.accelerator!r} is no preset"))
    named = (point.hardware or "").lower().replace(" ", "-")
    matching = [key for key in ACCELERATORS if key.startswith(named)] if named else []
    if point.accelerator is None and matching:
        presets = " or ".join(matching)
        found.append(("accelerator", f"null, but its hardware {point.hardware!r} may be the preset {presets}"))
    if point.target_preset is not None and point.target_preset not in MODELS:
        found.append(("target_preset", f"{point.target_preset!r} is no preset"))
    if point.draft_preset is not None and point.draft_preset not in MODELS:
        found.append(("draft_preset", f"{point.draft_preset!r} is no preset"))
    if point.draft_preset is not None and point.draft_method not in MODEL_METHODS:
        found.append(("draft_preset", f"a {point.draft_method} draft is no separate model"))
    if point.draft_kv_budget is not None and point.draft_method not in SPARSE_METHODS:
        found.append(("draft_kv_budget", "only a sparse-KV draft reads part of the cache"))
    for name in ("weights", "draft_weights"):
        given = getattr(point, name)
        if given is not None and not given.strip():
            found.append((name, f"null for bf16, else the source's format (priced: {', '.join(WEIGHTS)})"))
    if point.draft_weights is not None and point.draft_method in ("ngram", "self-speculation-sparse-kv"):
        found.append(("draft_weights", f"a {point.draft_method} draft has no weights of its own"))
    if point.prompt_len is not None and not (point.prompt_len >= 1 and point.output_len):
        found.append(("prompt_len", "at least 1, and read per generated token: it needs output_len"))
    for name in ("kv_cache_tokens", "baseline_kv_cache_tokens"):
        given = getattr(point, name)
        if given is not None and (given < 1 or point.batch_kind != "concurrency"):
            found.append((name, "at least 1, on a point measured at a concurrency (a batch runs whole)"))
    if point.devices is not None and point.tensor_parallel is not None and point.tensor_parallel > point.devices:
        found.append(("tensor_parallel", f"{point.tensor_parallel} is more than the {point.devices} devices"))
    if point.replicas is not None and not (
        point.replicas >= 2 and point.tensor_parallel and point.devices == point.replicas * point.tensor_parallel
    ):
        found.append(("replicas", "null for one engine, else at least 2, with devices = replicas x tensor_parallel"))
    if point.speedup is None and not point.notes:
        found.append(("speedup", "a point without a figure says why in notes"))
    if point.speedup is not None and not 0.1 < point.speedup < 10:
        found.append(("speedup", f"{point.speedup} is outside 0.1 to 10"))
    if point.acceptance_length is not None:
        if point.acceptance_length < 1:
            found.append(("acceptance_length", "at least 1 (the bonus token)"))
        if point.k is not None and not point.tree and point.acceptance_length > point.k + 1 + 1e-9:
            found.append(("acceptance_length", f"{point.acceptance_length} is more than k + 1 = {point.k + 1}"))
    if point.speedup and point.baseline_value and point.spec_value and point.value_unit == "tokens/s":
        ratio = point.spec_value / point.baseline_value
        if abs(ratio / point.speedup - 1) > 0.01:
            found.append(("speedup", f"{point.speedup} is not spec_value / baseline_value = {ratio:.4f}"))
    return found


@cache
def load() -> tuple[PublishedPoint, ...]:
    payload: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    names = {item.name for item in fields(PublishedPoint)}
    return tuple(PublishedPoint(**{name: item.get(name) for name in names}) for item in payload["points"])


def source(point: PublishedPoint) -> str:
    """The publication a point comes from (its address without the fragment): a paper, a post, a pull request."""
    return point.url.split("#", 1)[0].split(" ", 1)[0]


def sweeps(points: Iterable[PublishedPoint]) -> dict[str, list[PublishedPoint]]:
    """Points by sweep, each sorted by batch, then k."""
    grouped: dict[str, list[PublishedPoint]] = {}
    for point in points:
        grouped.setdefault(point.sweep, []).append(point)
    return {name: sorted(group, key=lambda item: (item.batch or 0, item.k or 0)) for name, group in grouped.items()}


# ---------------------------------------------------------------------------
# Classes: what a statement of accuracy is about


def method_family(method: str) -> str:
    if method in HEAD_METHODS:
        return "head"
    if method in SPARSE_METHODS:
        return "sparse-kv"
    if method in MODEL_METHODS:
        return "draft-model"
    return method


def engine_family(engine: str | None) -> str:
    name = (engine or "").lower()
    for key, family in (("sglang", "SGLang"), ("tensorrt", "TensorRT-LLM"), ("vllm", "vLLM"), ("llama", "llama.cpp")):
        if key in name:
            return family
    return "other"


def accelerator_family(key: str | None) -> str:
    """The accelerator's family (presets.ACCELERATOR_FAMILIES); an accelerator given by its own figures has none."""
    return ACCELERATOR_FAMILIES.get(key or "", "an accelerator of your own")


def context_regime(context: int | None) -> str:
    return "long" if (context or limits.DEFAULT_CONTEXT) >= LONG_CONTEXT else "short"


@dataclass(frozen=True)
class PointClass:
    """Method x engine x accelerator family x context: a class of setups a stated error is about.

    ``engine`` None matches every engine (a request that names none)."""

    method: str
    engine: str | None
    accelerator: str
    context: str

    @property
    def label(self) -> str:
        engine = self.engine or "any engine"
        return f"{self.method} drafts, {engine}, {self.accelerator}, {self.context} context"

    def holds(self, other: PointClass) -> bool:
        return (
            self.method == other.method
            and self.accelerator == other.accelerator
            and self.context == other.context
            and (self.engine is None or self.engine == other.engine)
        )


def point_class(point: PublishedPoint) -> PointClass:
    return PointClass(
        method_family(point.draft_method),
        engine_family(point.engine),
        accelerator_family(point.accelerator),
        context_regime(point.context),
    )


# ---------------------------------------------------------------------------
# The stated interval: the batches where a predicted speedup's interval contains 1


MIN_CLASS_POINTS = 3  # a class states its own median from this many scored points


# The predicted speedup's interval holds at least this share of setups like the published ones.  It is
# split-conformal: with n errors each predicted out of source, the ceil((n + 1) x COVERAGE)-th smallest |log error|
# holds a further setup's error with probability COVERAGE or more where the setups are exchangeable.  The worst
# error instead (the interval before) is as wide as the one most extreme source, whatever the class.
COVERAGE = 0.9


def covering(errors: Sequence[float] | FloatArray) -> float | None:
    """The |log error| that holds COVERAGE of further predictions, from ``errors`` made out of source (those not
    finite left out); None where there are too few for it (fewer than 9 at 90%)."""
    values = np.abs(np.asarray(errors, dtype=np.float64))
    ordered = np.sort(values[np.isfinite(values)])
    rank = math.ceil((ordered.size + 1) * COVERAGE - 1e-9)
    return float(ordered[rank - 1]) if rank <= ordered.size else None


def interval_spread(mine: Sequence[float] | FloatArray, every: Sequence[float] | FloatArray) -> tuple[float, str]:
    """The interval's half-width in log and whose errors set it: the class's own (``mine``) where it has enough
    for COVERAGE, else every published point's, widened to the class's own worst where that is wider."""
    own = covering(mine)
    if own is not None:
        return own, "this class"
    pooled = covering(every)
    if pooled is None:
        pooled = max((abs(float(value)) for value in every if math.isfinite(value)), default=0.0)
    worst = max((abs(float(value)) for value in mine if math.isfinite(value)), default=0.0)
    return (worst, "this class") if worst > pooled else (pooled, "every published point")


def asked_class(kind: PointClass) -> PointClass:
    """The class an answer about a setup of class ``kind`` states its error for: the batch answers name no engine."""
    return replace(kind, engine=None)


CROSSOVER_BATCHES = np.arange(1, 4097, dtype=np.float64)


@dataclass(frozen=True)
class Stretch:
    """A run of batches at which the speedup's interval holds 1, and what lies either side of it: whether the
    interval lies above 1 (speculation surely pays) just before and just after, None at either end of the batches
    (``high`` None: it still holds 1 at the last batch)."""

    low: int
    high: int | None
    pays_before: bool | None
    pays_past: bool | None


def stretches(batches: FloatArray, speedup: FloatArray, spread: float) -> list[Stretch]:
    """Each run of batches at which the speedup's interval [S e^-spread, S e^spread] holds 1, in order.  A speedup
    that dips and recovers (a mixture of experts at small batches) holds 1 in more than one run, with batches
    between them where it surely pays; :func:`crossover_range` is the first run's start and the last one's end."""
    low, high = speedup * math.exp(-spread), speedup * math.exp(spread)
    inside = (low <= 1.0) & (high >= 1.0)
    runs: list[Stretch] = []
    start: int | None = None
    for index in range(len(batches) + 1):
        if index < len(batches) and inside[index]:
            start = index if start is None else start
            continue
        if start is None:
            continue
        before = None if start == 0 else bool(speedup[start - 1] > 1.0)
        after = None if index == len(batches) else bool(speedup[index] > 1.0)
        end = None if index == len(batches) else int(batches[index - 1])
        runs.append(Stretch(int(batches[start]), end, before, after))
        start = None
    return runs


def span(runs: Sequence[Stretch]) -> tuple[int | None, int | None, bool | None]:
    """The first run's start, the last run's end and whether speculation surely pays past it; all None for no run."""
    return (runs[0].low, runs[-1].high, runs[-1].pays_past) if runs else (None, None, None)


def crossover_range(batches: FloatArray, speedup: FloatArray, spread: float) -> tuple[int | None, int | None]:
    """The batches at which the speedup's interval [S e^-spread, S e^spread] contains 1: (first, last), None
    where it never does within ``batches`` (last None where it still does at the largest batch)."""
    low, high, _ = span(stretches(batches, speedup, spread))
    return low, high


# ---------------------------------------------------------------------------
# What every answer from the defaults says about them


@cache
def published_fit() -> dict[str, Any]:
    fit_: dict[str, Any] = json.loads(FIT.read_text(encoding="utf-8"))
    return fit_


@dataclass(frozen=True)
class Accuracy:
    """The defaults' leave-one-source-out error overall and on the requests' class of setups."""

    points: int  # scored published points, each predicted from the other sources
    sources: int
    median_error: float | None
    worst_error: float | None
    setup_class: str  # the class of the setup asked about, in words
    class_points: int
    class_median_error: float | None
    class_worst_error: float | None
    spread: float  # the interval's half-width in log (interval_spread): what held COVERAGE of the published points
    spread_from: str  # "this class" or "every published point"
    measured_hardware: tuple[str, ...]  # accelerator presets with a scored published point

    @property
    def sentence(self) -> str:
        """What every answer from the defaults says about them."""
        overall = (
            f"median {self.median_error or 0:.0%} / worst {self.worst_error or 0:.0%} over {self.points} published "
            f"points from {self.sources} sources, each source predicted by terms fitted on the others"
        )
        if self.class_points == 0:
            return f"defaults: no published measurement of this class ({self.setup_class}); {overall}; {self.interval}"
        few = " (too few to state a median of their own)" if self.class_points < MIN_CLASS_POINTS else ""
        return (
            f"defaults: on {self.class_points} published points of this class ({self.setup_class}){few}, median "
            f"error {self.class_median_error or 0:.0%} / worst {self.class_worst_error or 0:.0%}; {overall}; "
            f"{self.interval}"
        )

    @property
    def interval(self) -> str:
        """Where the predicted speedup's interval comes from, in words."""
        factor = f"the interval, a factor of {math.exp(self.spread):.2f} either way,"
        if self.spread_from != "this class":
            return f"{factor} holds at least {COVERAGE:.0%} of every published point's errors"
        if self.class_worst_error is not None and math.isclose(math.expm1(self.spread), self.class_worst_error):
            return f"{factor} is this class's worst error"
        return f"{factor} holds at least {COVERAGE:.0%} of this class's errors"

    def band(self, speedup: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The predicted speedup's interval."""
        return speedup * math.exp(-self.spread), speedup * math.exp(self.spread)


def class_of_setup(setup: RooflineSetup, engine: str | None = None) -> PointClass:
    """The class of a request's setup: its draft (a head, a model, or either drafting all k in one pass), engine
    where it names one, accelerator family (none when given by its own figures; a preset's device over another link
    keeps its family) and context."""
    accelerator = device_preset(setup.accelerator)
    head = any(setup.draft.name.startswith(head.label) for head in DRAFT_HEADS.values())
    return PointClass(
        method_family(PARALLEL_METHODS[0]) if setup.parallel_draft else "head" if head else "draft-model",
        engine_family(engine) if engine else None,
        accelerator_family(accelerator),
        context_regime(setup.context_tokens),
    )


def _classes_in_fit() -> list[tuple[PointClass, float]]:
    rows = []
    by_id = {point.id: point for point in load()}
    for row in published_fit()["points"]:
        if row["predicted"] is None:
            continue
        point = by_id[row["id"]]
        rows.append((point_class(point), abs(math.log(row["predicted"] / (point.speedup or 1.0)))))
    return rows


@cache
def accuracy_for(request: PointClass | None = None) -> Accuracy:
    """The defaults' accuracy, and on ``request``'s class (every point's where None)."""
    loso = published_fit()["leave_one_source_out"]
    rows = _classes_in_fit()
    every = [error for _kind, error in rows]
    mine = [error for kind, error in rows if request is None or request.holds(kind)]
    spread, spread_from = interval_spread(mine, every)
    scored_hardware = {point.accelerator or "" for point in load() if point.priced}
    return Accuracy(
        points=loso["points"],
        sources=loso["sources"],
        median_error=loso["median_error"],
        worst_error=loso["worst_error"],
        setup_class=request.label if request is not None else "every published setup",
        class_points=len(mine),
        class_median_error=math.expm1(statistics.median(mine)) if mine else None,
        class_worst_error=math.expm1(max(mine)) if mine else None,
        spread=spread,
        spread_from=spread_from,
        measured_hardware=tuple(sorted(scored_hardware)),
    )


def answered_classes() -> list[Accuracy]:
    """The accuracy, interval included, of each class a batch answer can state (no engine named) that holds a
    scored published point; the most points first."""
    asked = {asked_class(kind) for kind, _error in _classes_in_fit()}
    return sorted((accuracy_for(kind) for kind in asked), key=lambda item: (-item.class_points, item.setup_class))


def shipped_accuracy() -> Accuracy:
    return accuracy_for(None)
