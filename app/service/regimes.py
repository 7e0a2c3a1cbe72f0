"""From a request for a roofline (preset keys plus field overrides) to response models and CSV.

Shared by the API router and the command line, so that both give the same numbers in the
same shape.  Imports pydantic schemas but nothing from the web framework.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from app.model import limits
from app.model.arithmetic import closed_form
from app.model.arithmetic.acceptance import Acceptance, AcceptanceProfile, expected_tokens, iid_p
from app.model.cost import capacity, published
from app.model.cost.capacity import Decision, fewest_devices, fitting_marks
from app.model.cost.presets import (
    ACCELERATOR_FIELDS,
    ACCELERATORS,
    DRAFT_CHOICES,
    DRAFT_HEADS,
    MODEL_FIELDS,
    MODELS,
    WEIGHT_FORMATS,
    WEIGHTS,
    Accelerator,
    ModelSpec,
    device_preset,
    draft_preset,
    with_overrides,
)
from app.model.cost.regimes import (
    BatchSweep,
    Regime,
    RegimeName,
    RooflineSetup,
    TableComparison,
    acceptance_grid,
    compare_regimes,
    default_setup,
    devices_to_fit,
    make_regime,
    memory_capacity_gb,
    operations_ratio,
    sweep_batches,
    target_step,
)
from app.model.limits import FieldError
from app.service.schemas.fill import filled
from app.service.schemas.regimes import (
    AcceleratorOut,
    AccuracyOut,
    BatchPoint,
    BatchSweepOut,
    MarkedCell,
    ModelOut,
    PresetList,
    RegimeOut,
    ScheduleOut,
    ScheduleStepOut,
    SetupOut,
    StretchOut,
    TableOut,
    VerificationCostOut,
    VerificationPoint,
    WinToLossOut,
)

KV_CACHE_FORMATS: dict[str, float] = {"bf16": 2.0, "fp8": 1.0}
# Caps on the work of one request or command (the router states them in its parameter descriptions).
DEFAULTS = default_setup()
OVERRIDE_PREFIXES: dict[str, tuple[str, ...]] = {
    "hw": ACCELERATOR_FIELDS,
    "model": MODEL_FIELDS,
    "draft": MODEL_FIELDS,
}


class SetupError(ValueError):
    """A request that names a parameter it cannot honour; ``rule``, where a model's rule between fields refused
    it, words that rule in a caller's labels (:meth:`worded`)."""

    def __init__(self, name: str, message: str, rule: FieldError | None = None) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message
        self.rule = rule

    def worded(self, labels: Mapping[str, str]) -> str:
        """The message with the fields of its rule as ``labels`` calls them."""
        return self.message if self.rule is None else self.rule.worded(labels)

    def __reduce__(self) -> tuple[type[SetupError], tuple[str, str, FieldError | None]]:
        # Pickled back from a heavy-work process: rebuilt from its parts, not its message.
        return type(self), (self.name, self.message, self.rule)


# How the draft proposes its k tokens: one per pass (a chain), or all k in one pass (RooflineSetup.parallel_draft; a
# parallel head, a P-EAGLE's in presets.DRAFT_HEADS, always does).
DRAFTINGS = ("chain", "parallel")


@dataclass(frozen=True)
class SetupRequest:
    """Preset keys, number formats, serving conditions and per-field overrides.

    ``overrides`` maps ``hw_<field>``, ``model_<field>`` and ``draft_<field>`` to values;
    ``devices = 0`` picks the fewest (a power of two) that hold both models at batch one.
    """

    hw: str = limits.DEFAULT_HW
    model: str = limits.DEFAULT_MODEL
    draft: str = limits.DEFAULT_DRAFT
    drafting: str = DRAFTINGS[0]  # one token per draft pass (chain), or all k in one pass (parallel)
    weights: str = limits.DEFAULT_WEIGHTS
    draft_weights: str | None = None
    kv_cache: str = limits.DEFAULT_KV_CACHE
    devices: int = 0
    context: int = DEFAULTS.context_tokens
    bandwidth_efficiency: float = DEFAULTS.bandwidth_efficiency
    compute_efficiency: float = DEFAULTS.compute_efficiency
    overhead_us: float = DEFAULTS.step_overhead_us
    overrides: Mapping[str, float | int | None] = field(default_factory=dict)
    cost_terms: Mapping[str, float | None] = field(default_factory=dict)  # limits.COST_TERMS given
    measured: Measured | None = None  # the terms are a step fit's


@dataclass(frozen=True)
class Measured:
    """Terms fitted to measured steps (a sweep from ``measure --batch``, an engine's step times): how many steps,
    and the fit's out-of-sample error (each batch predicted from the others), as a fraction."""

    steps: int
    error: float

    @property
    def sentence(self) -> str:
        return f"measured: fitted to {self.steps} steps, out-of-sample error {self.error:.0%}"


@dataclass(frozen=True)
class BuiltSetup:
    setup: RooflineSetup
    description: SetupOut
    fit_batch: int = 1  # devices chosen automatically hold both models and this many sequences
    measured: Measured | None = None


def _choice(name: str, value: str, allowed: Mapping[str, object]) -> None:
    if value not in allowed:
        raise SetupError(name, f"must be one of {', '.join(allowed)}; got {value!r}")


def _prefixed(overrides: Mapping[str, float | int | None], prefix: str) -> dict[str, float | int]:
    fields = OVERRIDE_PREFIXES[prefix]
    chosen: dict[str, float | int] = {}
    for name, value in overrides.items():
        if value is None or not name.startswith(prefix + "_"):
            continue
        field_name = name[len(prefix) + 1 :]
        if field_name not in fields:
            raise SetupError(name, f"is not a field of {prefix}; fields: {', '.join(fields)}")
        chosen[field_name] = value
    return chosen


def _edited_model(
    prefix: str, key: str, overrides: Mapping[str, float | int | None], base: ModelSpec | None = None
) -> ModelSpec:
    """The preset (or ``base``) with its overrides; a broken rule is blamed on a field the request changed."""
    changes = _prefixed(overrides, prefix)
    try:
        return with_overrides(base or MODELS[key], changes)
    except FieldError as error:
        blamed = next((name for name in error.fields if name in changes), error.field)
        name = f"{prefix}_{blamed}" if blamed in MODEL_FIELDS else prefix
        raise SetupError(name, str(error), error) from error
    except ValueError as error:  # a field the preset does not have
        raise SetupError(prefix, str(error)) from error


def _cost_terms(given: Mapping[str, float | None]) -> dict[str, float | None]:
    known = {term.name: term for term in limits.COST_TERMS}
    for name, value in given.items():
        if name not in known:
            raise SetupError(name, f"is not a cost term; terms: {', '.join(known)}")
        if value is not None and not 0 <= value <= known[name].high:
            raise SetupError(name, f"must be from 0 to {known[name].high:g}; got {value:g}")
    return dict(given)


def _link_name(accelerator: Accelerator) -> str:
    """How a preset's device edited only in its link reads: its rate, and the mesh it is split over."""
    links = accelerator.links
    mesh = f"{links} link{'s' if links != 1 else ''}" if links else ""
    if accelerator.link_gb_s is None:
        return mesh or "no link"
    return f"link {accelerator.link_gb_s:g} GB/s" + (f" over {mesh}" if mesh else "")


def build_setup(request: SetupRequest) -> BuiltSetup:
    """The roofline a request describes, or a SetupError naming the offending parameter."""
    _choice("hw", request.hw, ACCELERATORS)
    _choice("model", request.model, MODELS)
    _choice("draft", request.draft, dict.fromkeys(DRAFT_CHOICES))
    _choice("drafting", request.drafting, dict.fromkeys(DRAFTINGS))
    _choice("weights", request.weights, WEIGHT_FORMATS)
    draft_weights = request.weights if request.draft_weights is None else request.draft_weights
    _choice("draft_weights", draft_weights, WEIGHT_FORMATS)
    _choice("kv_cache", request.kv_cache, KV_CACHE_FORMATS)
    for name in request.overrides:
        if name.split("_", 1)[0] not in OVERRIDE_PREFIXES:
            raise SetupError(name, "is not a preset field")
    try:
        own_figures = _prefixed(request.overrides, "hw")
        accelerator: Accelerator = with_overrides(ACCELERATORS[request.hw], own_figures)
        preset = ACCELERATORS[request.hw]
        if own_figures.get("bf16_tflops", preset.bf16_tflops) != preset.bf16_tflops and "fp8_tflops" not in own_figures:
            # a preset's FP8 rate goes with its BF16 rate: beside a BF16 rate of the user's own it is nobody's, so
            # FP8 weights multiply at the rate given (Accelerator.fp8_tflops None) unless an FP8 rate is given too
            accelerator = replace(accelerator, fp8_tflops=None)
        if device_preset(accelerator) != request.hw:  # a device of its own figures: the user's, not the preset's
            accelerator = replace(
                accelerator,
                name=f"your accelerator ({accelerator.bandwidth_tb_s:g} TB/s, {accelerator.bf16_tflops:g} TFLOPS"
                + (f" ({accelerator.fp8_tflops:g} at FP8)" if "fp8_tflops" in own_figures else "")
                + f", {accelerator.memory_gb:g} GB)",
            )
        elif accelerator != preset:  # the preset's device over another link (a bridge, or none for peer-to-peer)
            accelerator = replace(accelerator, name=f"{preset.name}, {_link_name(accelerator)}")
    except SetupError:
        raise
    except FieldError as error:
        raise SetupError(f"hw_{error.field}", str(error), error) from error
    except ValueError as error:  # a field the preset does not have
        raise SetupError("hw", str(error)) from error
    target = _edited_model("model", request.model, request.overrides)
    kind = DRAFT_HEADS.get(request.draft)  # the head the draft is, None for a separate model
    head = draft_preset(request.draft, request.model, target) if kind is not None else None
    draft = _edited_model("draft", request.draft, request.overrides, head)
    try:
        setup = RooflineSetup(
            accelerator=accelerator,
            target=target,
            draft=draft,
            devices=max(request.devices, 1),
            target_bytes_per_param=WEIGHTS[request.weights].bytes_per_param,
            draft_bytes_per_param=WEIGHTS[draft_weights].bytes_per_param,
            target_fp8=WEIGHTS[request.weights].fp8,
            draft_fp8=WEIGHTS[draft_weights].fp8,
            parallel_draft=request.drafting == "parallel" or (kind is not None and kind.parallel),
            kv_bytes_per_value=KV_CACHE_FORMATS[request.kv_cache],
            context_tokens=request.context,
            bandwidth_efficiency=request.bandwidth_efficiency,
            compute_efficiency=request.compute_efficiency,
            step_overhead_us=request.overhead_us,
        )
        setup = replace(setup, **_cost_terms(request.cost_terms))  # type: ignore[arg-type]  # checked above
    except FieldError as error:
        raise SetupError(error.field, str(error), error) from error
    devices_auto = request.devices == 0
    if devices_auto:
        setup = replace(setup, devices=devices_to_fit(setup, 1, limits.MAX_DEVICES) or limits.MAX_DEVICES)
    return BuiltSetup(setup, describe_setup(setup, request, devices_auto), measured=request.measured)


def accelerator_out(key: str, accelerator: Accelerator) -> AcceleratorOut:
    return filled(AcceleratorOut, accelerator, key=key)


def model_out(key: str, model: ModelSpec) -> ModelOut:
    return filled(ModelOut, model, key=key)


def describe_setup(setup: RooflineSetup, request: SetupRequest, devices_auto: bool) -> SetupOut:
    return filled(  # the setup's own fields by name (bytes per value, devices, efficiencies, terms), and these
        SetupOut,
        setup,
        accelerator=accelerator_out(request.hw, setup.accelerator),
        target=model_out(request.model, setup.target),
        draft=model_out(request.draft, setup.draft),
        weights=request.weights,
        draft_weights=request.weights if request.draft_weights is None else request.draft_weights,
        kv_cache=request.kv_cache,
        devices_auto=devices_auto,
        effective_bandwidth_tb_s=setup.bandwidth_bytes_s / 1e12,
        effective_tflops=setup.compute_flops_s / 1e12,
        memory_capacity_gb=memory_capacity_gb(setup),
        operations_ratio=operations_ratio(setup),
    )


def presets_out() -> PresetList:
    return PresetList(
        accelerators=[accelerator_out(key, value) for key, value in ACCELERATORS.items()],
        models=[model_out(key, value) for key, value in MODELS.items()],
        weight_formats=dict(WEIGHT_FORMATS),
        kv_cache_formats=dict(KV_CACHE_FORMATS),
        regimes=[name.value for name in RegimeName],
        defaults=build_setup(SetupRequest()).description,
    )


# ---------------------------------------------------------------------------
# Verification cost under one regime


def regime_out(regime: Regime) -> RegimeOut:
    return filled(RegimeOut, regime, name=regime.name.value)


def verification_out(regime: Regime, p: float, k: int, k_max: int, built: BuiltSetup | None) -> VerificationCostOut:
    k_max = max(k_max, k)
    c, verify = regime.draft_cost, regime.verify
    steps = None
    if regime.name is RegimeName.ROOFLINE and built is not None and regime.batch is not None:
        steps = target_step(built.setup, regime.batch, np.arange(k_max + 1) + 1.0)
    points = []
    for j in range(k_max + 1):
        point = VerificationPoint(
            k=j,
            verification_cost=verify(j),
            cost_per_cycle=closed_form.cost_per_cycle(j, c, verify),
            speedup=closed_form.speedup(p, j, c, verify),
        )
        if steps is not None:
            point.step_ms = float(steps.total_s[j] * 1e3)
            point.memory_ms = float(steps.memory_s[j] * 1e3)
            point.compute_ms = float(steps.compute_s[j] * 1e3)
            point.compute_bound = bool(steps.compute_bound[j])
        points.append(point)
    best, best_value = closed_form.best_k(p, c, k_max, verify)
    return VerificationCostOut(
        regime=regime.name.value,
        label=regime.label,
        p=p,
        k=k,
        k_max=k_max,
        draft_cost=c,
        beta=regime.beta,
        batch=regime.batch,
        expected_tokens=closed_form.expected_tokens(p, k),
        cost_per_cycle=closed_form.cost_per_cycle(k, c, verify),
        speedup=closed_form.speedup(p, k, c, verify),
        best_k=best,
        best_speedup=best_value,
        k_search_max=k_max,
        limit_reached=closed_form.limit_reached(best, k_max),
        break_even_acceptance=closed_form.break_even_acceptance(k, c, verify),
        max_draft_cost=closed_form.max_draft_cost(p, k, verify),
        points=points,
        setup=built.description if built is not None and regime.name is RegimeName.ROOFLINE else None,
    )


# ---------------------------------------------------------------------------
# Speedup against batch size


def _batch_point(sweep: BatchSweep, index: int, capacity_gb: float) -> BatchPoint:
    """The sweep's arrays at one batch (each as the Python number its field declares), and whether it fits."""
    arrays = {
        name: getattr(sweep, "batches" if name == "batch" else name)
        for name in BatchPoint.model_fields
        if name != "fits"
    }
    fits = bool(sweep.memory_needed_gb[index] <= capacity_gb)
    return BatchPoint(**{name: values[index].item() for name, values in arrays.items()}, fits=fits)


def accuracy_out(setup: RooflineSetup, measured: Measured | None = None, engine: str | None = None) -> AccuracyOut:
    """How good the roofline's numbers are: the defaults' leave-one-source-out error on published points, overall
    and on the setup's class, a step fit's out-of-sample error (``measured``), or the terms given."""
    kind = published.class_of_setup(setup, engine)
    shipped = published.accuracy_for(kind)
    defaults = (
        setup.bandwidth_efficiency == limits.DEFAULT_BANDWIDTH_EFFICIENCY
        and setup.compute_efficiency == limits.DEFAULT_COMPUTE_EFFICIENCY
        and setup.step_overhead_us == limits.DEFAULT_OVERHEAD_US
        and all(getattr(setup, term.name) == term.default for term in limits.COST_TERMS)
    )
    everyone = published.shipped_accuracy()
    crossing = [row for row in published.published_fit()["crossovers"] if row["measured"] is not None]
    first = crossing[0] if crossing else None
    if measured is not None:
        summary = f"{measured.sentence} (each batch predicted from the others); for comparison, {shipped.sentence}."
    elif defaults:
        summary = f"{shipped.sentence}. Fit them to your server with measure --batch or step-fit."
    else:
        summary = (
            "From the efficiencies and overheads given here (set, or fitted with step-fit, whose fit error is "
            f"theirs); for comparison, {shipped.sentence}."
        )
    fit = published.published_fit()
    return AccuracyOut(
        source="measured" if measured is not None else "defaults" if defaults else "given",
        summary=summary,
        median_error=everyone.median_error,
        worst_error=everyone.worst_error,
        published_points=everyone.points,
        crossover_measured=first["measured"] if first else None,
        crossover_predicted=first["predicted"] if first else None,
        fitted_terms=dict(fit["terms"]),
        fitted_median_error=everyone.median_error,
        fitted_worst_error=everyone.worst_error,
        fitted_points=everyone.points,
        measured_steps=measured.steps if measured is not None else None,
        measured_error=measured.error if measured is not None else None,
        published_sources=everyone.sources,
        setup_class=kind.label,
        class_points=shipped.class_points,
        class_median_error=shipped.class_median_error if shipped.class_points >= published.MIN_CLASS_POINTS else None,
        class_worst_error=shipped.class_worst_error,
        interval_spread=math.expm1(shipped.spread),
        interval_from=shipped.spread_from,
    )


def sweep_out(
    acceptance: Acceptance, k: int, k_max: int, batch_max: int, batch: int, points: int, built: BuiltSetup
) -> BatchSweepOut:
    """The sweep over batch 1..batch_max at k; a measured profile prices each k with its tokens per verification."""
    k_max = max(k_max, k)
    p = iid_p(acceptance)
    sweep = sweep_batches(acceptance, k, built.setup, batch_max, k_max)
    capacity = memory_capacity_gb(built.setup)
    fits = sweep.memory_needed_gb <= capacity
    marks = fitting_marks(built.setup, k, sweep.batches, sweep.speedup, sweep.best_speedup, sweep.best_k, batch_max)
    max_fit = marks.max_batch_that_fits
    accuracy = accuracy_out(built.setup, built.measured)
    spread = math.log1p(accuracy.interval_spread or 0.0) if accuracy.source == "defaults" else 0.0
    low, high = sweep.speedup * math.exp(-spread), sweep.speedup * math.exp(spread)
    runs = published.stretches(sweep.batches.astype(float), sweep.speedup, spread) if k else []
    band_low, band_high, band_pays_past = published.span(runs)
    band = (band_low, band_high)
    # the curve is drawn at every mark and on both sides of it, the band's ends included, so that the chart's band
    # crosses 1 where the answer says it does
    wanted_marks = [marks.crossover_batch, marks.first_loss_batch, marks.best_crossover_batch, max_fit, batch, *band]
    wanted = set(np.unique(np.rint(np.geomspace(1, batch_max, min(points, batch_max))).astype(int)).tolist())
    for mark in wanted_marks:
        if mark:
            wanted.update((mark - 1, mark, mark + 1))
    indices = np.array(sorted(b - 1 for b in wanted if 1 <= b <= batch_max))
    return BatchSweepOut(
        p=p,
        k=k,
        k_max=k_max,
        batch_max=batch_max,
        batch=batch,
        expected_tokens=expected_tokens(acceptance, k),
        crossover_batch=marks.crossover_batch,
        crossover_range_low=band_low,
        crossover_range_high=band_high,
        crossover_range_pays_past=band_pays_past,
        crossover_ranges=[filled(StretchOut, run) for run in runs],
        speedup_low=low[indices].tolist(),
        speedup_high=high[indices].tolist(),
        first_loss_batch=marks.first_loss_batch,
        best_crossover_batch=marks.best_crossover_batch,
        max_batch_that_fits=max_fit,
        headline=marks.headline,
        current=_batch_point(sweep, batch - 1, capacity),
        batches=sweep.batches[indices].tolist(),
        speedup=sweep.speedup[indices].tolist(),
        best_k=sweep.best_k[indices].tolist(),
        best_speedup=sweep.best_speedup[indices].tolist(),
        k_search_max=k_max,
        limit_reached=bool(np.any(sweep.best_k >= k_max)),
        draft_cost=sweep.draft_cost[indices].tolist(),
        verification_cost=sweep.verification_cost[indices].tolist(),
        verify_compute_bound=sweep.verify_compute_bound[indices].tolist(),
        fits=fits[indices].tolist(),
        setup=built.description,
        accuracy=accuracy,
    )


# ---------------------------------------------------------------------------
# Schedule


def devices_note(built: BuiltSetup) -> str:
    if not built.description.devices_auto:
        return ""
    if built.fit_batch > 1:
        return f" (chosen: the fewest that hold both models and {built.fit_batch} sequences)"
    return " (chosen: the fewest that hold both models)"


def devices_for_batch(built: BuiltSetup, fit_batch: int) -> BuiltSetup:
    """With devices chosen automatically: the fewest (a power of two) that also hold ``fit_batch`` sequences."""
    if not built.description.devices_auto or fit_batch <= 1:
        return built
    devices = fewest_devices(built.setup, fit_batch, limits.MAX_DEVICES) or limits.MAX_DEVICES
    setup = replace(built.setup, devices=devices)
    description = built.description.model_copy(
        update={
            "devices": devices,
            "memory_capacity_gb": memory_capacity_gb(setup),
            "effective_bandwidth_tb_s": setup.bandwidth_bytes_s / 1e12,
            "effective_tflops": setup.compute_flops_s / 1e12,
        }
    )
    return BuiltSetup(setup, description, fit_batch, built.measured)


def schedule_out(
    p: Acceptance, k_max: int, batch_max: int, built: BuiltSetup, profile: tuple[float, ...] = ()
) -> ScheduleOut:
    """Best k per batch over 1..min(batch_max, largest batch that fits); nothing past memory.  With a measured
    profile (``p`` one already, or ``profile``), tokens per verification come from it and the i.i.d. p only
    beyond it."""
    acceptance = AcceptanceProfile.of(iid_p(p), profile) if profile else p
    return decision_schedule(capacity.decide(acceptance, built.setup, k_max, batch_max, devices_note(built)), built)


def off_ranges(decision: Decision, accuracy: AccuracyOut) -> list[published.Stretch]:
    """The runs of batches at which the best speculating speedup's interval holds 1 (the stated error; none when
    the terms are the user's own or measured)."""
    if not decision.speculating_speedup:
        return []
    spread = math.log1p(accuracy.interval_spread or 0.0) if accuracy.source == "defaults" else 0.0
    batches = np.arange(1, len(decision.speculating_speedup) + 1, dtype=np.float64)
    return published.stretches(batches, np.asarray(decision.speculating_speedup), spread)


def off_range_text(runs: Sequence[published.Stretch | StretchOut]) -> str:
    """The runs in words, '' when there is none: where stopping is within the stated error, or, where the speedup
    rises past a run, where speculation may not pay."""
    parts = []
    for index, run in enumerate(runs):
        if index == 0 and run.pays_before is False:
            parts.append(f"does not pay below batch {run.low}")
        if run.high is None:
            parts.append(f"may stop paying from batch {run.low} on")
        elif run.pays_past:
            where = f"at batch {run.low}" if run.high == run.low else f"at batches {run.low} to {run.high}"
            parts.append(f"may not pay {where}, and pays past batch {run.high}")
        else:
            parts.append(f"stops paying between batch {run.low} and batch {run.high}")
    return "within the stated error it " + "; it ".join(parts) if parts else ""


def decision_schedule(decision: Decision, built: BuiltSetup) -> ScheduleOut:
    k_max = decision.k_max
    accuracy = accuracy_out(built.setup, built.measured)
    runs = off_ranges(decision, accuracy)
    low, high, past = published.span(runs)
    return filled(  # the decision's own fields by name (p, k_max, batch_max, limits, off batch, headline), and these
        ScheduleOut,
        decision,
        steps=[
            filled(ScheduleStepOut, step, limit_reached=closed_form.limit_reached(step.k, k_max))
            for step in decision.steps
        ],
        thresholds={str(step.batch_from): step.k for step in decision.steps},
        off_range_low=low,
        off_range_high=high,
        off_range_pays_past=past,
        off_ranges=[filled(StretchOut, run) for run in runs],
        k_search_max=k_max,
        limit_reached=any(closed_form.limit_reached(step.k, k_max) for step in decision.steps),
        setup=built.description,
        accuracy=accuracy,
    )


def schedule_csv(schedule: ScheduleOut) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["batch_from", "batch_to", "k", "speedup_at_from", "speedup_at_to"])
    for step in schedule.steps:
        writer.writerow(
            [step.batch_from, step.batch_to, step.k, f"{step.speedup_at_from:.6f}", f"{step.speedup_at_to:.6f}"]
        )
    return buffer.getvalue()


# ---------------------------------------------------------------------------
# p x k table under two regimes


@dataclass(frozen=True)
class RegimeRequest:
    name: RegimeName
    beta: float = 0.5
    batch: int = 1


def build_regime(request: RegimeRequest, draft_cost: float, built: BuiltSetup) -> Regime:
    return make_regime(request.name, draft_cost=draft_cost, beta=request.beta, setup=built.setup, batch=request.batch)


def two_regime_table(
    request_a: RegimeRequest,
    request_b: RegimeRequest,
    draft_cost: float,
    p_values: np.ndarray | list[float],
    k_max: int,
    built: BuiltSetup,
    marked_p: float = limits.DEFAULT_REGIMES_P,
    marked_k: int = limits.DEFAULT_REGIMES_K,
) -> TableOut:
    """The p x k table under two regimes sharing one draft cost, both also marked at (marked_p, marked_k)."""
    side_a = build_regime(request_a, draft_cost, built)
    side_b = build_regime(request_b, draft_cost, built)
    return table_out(p_values, k_max, side_a, side_b, built, marked_p=marked_p, marked_k=marked_k)


def table_out(
    p_values: np.ndarray | list[float],
    k_max: int,
    regime_a: Regime,
    regime_b: Regime,
    built: BuiltSetup,
    marked_p: float = limits.DEFAULT_REGIMES_P,
    marked_k: int = limits.DEFAULT_REGIMES_K,
) -> TableOut:
    comparison: TableComparison = compare_regimes(p_values, np.arange(1, k_max + 1), regime_a, regime_b)
    highlight = comparison.highlight
    uses_roofline = RegimeName.ROOFLINE in (regime_a.name, regime_b.name)
    return TableOut(
        p_values=comparison.p_values.tolist(),
        k_values=comparison.k_values.tolist(),
        regime_a=regime_out(regime_a),
        regime_b=regime_out(regime_b),
        speedup_a=comparison.speedup_a.tolist(),
        speedup_b=comparison.speedup_b.tolist(),
        win_to_loss_cells=comparison.win_to_loss_cells,
        highlight=filled(WinToLossOut, highlight) if highlight else None,
        marked=MarkedCell(
            p=marked_p,
            k=marked_k,
            speedup_a=closed_form.speedup(marked_p, marked_k, regime_a.draft_cost, regime_a.verify),
            speedup_b=closed_form.speedup(marked_p, marked_k, regime_b.draft_cost, regime_b.verify),
        ),
        setup=built.description if uses_roofline else None,
    )


def table_csv(table: TableOut) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["regime", "label", "p", *(f"k={k}" for k in table.k_values)])
    for side, regime, grid in (("a", table.regime_a, table.speedup_a), ("b", table.regime_b, table.speedup_b)):
        for p, row in zip(table.p_values, grid, strict=True):
            writer.writerow([side, regime.label, f"{p:g}", *(f"{value:.6f}" for value in row)])
    return buffer.getvalue()


def p_values_for(p_min: float, p_max: float, p_step: float, max_rows: int) -> np.ndarray:
    """The table's rows, or a SetupError naming p_max / p_step."""
    if p_min > p_max:
        raise SetupError("p_max", f"must be at least p_min ({p_min:g}); got {p_max:g}")
    rows = int(np.floor((p_max - p_min) / p_step + 1e-9)) + 1
    if rows > max_rows:
        raise SetupError("p_step", f"gives {rows} rows; at most {max_rows} (raise p_step or narrow p_min..p_max)")
    return acceptance_grid(p_min, p_max, p_step)
