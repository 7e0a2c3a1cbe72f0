"""Measured step times to fitted efficiencies, the fit's error and the schedule of the fitted model."""

from __future__ import annotations

from app.model import limits
from app.model.cost.step_cost import MODEL as STEP_COST_MODEL
from app.model.cost.step_cost import TERM_LABELS
from app.model.live import step_fit
from app.model.live.step_fit import StepFitError
from app.service.regimes import BuiltSetup, Measured, accuracy_out, schedule_out
from app.service.schemas.engines import StepCostOut, StepFitOut, StepPointOut
from app.service.schemas.fill import filled

MAX_BYTES = 1_000_000

__all__ = ["MAX_BYTES", "StepFitError", "step_fit_out"]


def _figure(value: float) -> str:
    return f"{value:.4g}"


def fitted_query(bandwidth: float, compute: float, overhead_us: float, measured: Measured | None) -> str:
    """The fitted terms as query parameters: each cost term the measured steps hold at 0, the draft step's overhead
    the pass's, and the fit's size and out-of-sample error where it has one."""
    pairs = [
        ("bandwidth_efficiency", _figure(bandwidth)),
        ("compute_efficiency", _figure(compute)),
        ("overhead_us", _figure(overhead_us)),
        *(
            (term.name, _figure(overhead_us) if term.name == "overhead_per_draft_step_us" else "0")
            for term in limits.COST_TERMS
        ),
    ]
    if measured is not None:
        pairs += [("fit_steps", str(measured.steps)), ("fit_error", _figure(measured.error * 100))]
    return "&".join(f"{name}={value}" for name, value in pairs)


def fitted_setup(text: str, built: BuiltSetup) -> tuple[step_fit.StepFit, BuiltSetup]:
    """Measured step times fitted on ``built``'s hardware and models: the fit, and the setup priced with its terms
    (measured, with the fit's out-of-sample error, where the steps span more than one batch size)."""
    format_name, rows = step_fit.read_step_times(text)
    fit = step_fit.fit_step_times(built.setup, format_name, rows)
    description = built.description.model_copy(
        update={
            "bandwidth_efficiency": fit.bandwidth_efficiency,
            "compute_efficiency": fit.compute_efficiency,
            "step_overhead_us": fit.overhead_us,
            "draft_step_overhead_us": fit.overhead_us,
            **{term.name: getattr(fit.setup, term.name) for term in limits.COST_TERMS},
            "effective_bandwidth_tb_s": fit.setup.bandwidth_bytes_s / 1e12,
            "effective_tflops": fit.setup.compute_flops_s / 1e12,
        }
    )
    measured = Measured(len(rows), fit.holdout_error) if fit.holdout_error is not None else None
    return fit, BuiltSetup(fit.setup, description, built.fit_batch, measured)


def step_fit_out(text: str, built: BuiltSetup, p: float | None, k_max: int, batch_max: int) -> StepFitOut:
    fit, fitted = fitted_setup(text, built)
    format_name, rows, measured = fit.format, fit.rows, fitted.measured
    notes = [
        "add query to the same setup's query on any endpoint that prices a step (or to /batch's address) to use the "
        "fitted model: bandwidth_efficiency, compute_efficiency and overhead_us (overhead_per_draft_step_us the "
        "same, overhead_per_sequence_us, cycle_overhead_us, cycle_overhead_per_sequence_us and allreduce_us 0: the "
        "measured steps hold them)"
        + (", and fit_steps and fit_error, so that the answers say 'measured'" if measured else ""),
    ]
    if measured is None:
        notes.append("one batch size: nothing to hold out, so the answers from these terms say 'given', not 'measured'")
    if format_name == "vllm-dynamic-config":
        notes.append("each median inter-token latency is taken as the time of one step (k = 0) or one cycle (k > 0)")
    terms = fit.step_cost
    if terms is not None:
        notes += [f"{TERM_LABELS[name]} kept at 0: {why}" for name, why in terms.kept.items()]
    if fit.at_bounds:
        notes.append(f"{', '.join(fit.at_bounds)} at a bound of its range: the data do not pin it down")
    return filled(
        StepFitOut,
        fit,
        format=format_name,
        rows=len(rows),
        points=[
            StepPointOut(
                batch=row.batch,
                kind=row.kind,
                tokens=row.draft_steps if row.draft_steps else row.tokens,
                measured_ms=row.ms,
                fitted_ms=value,
            )
            for row, value in zip(rows, fit.fitted_ms, strict=True)
        ],
        step_cost=(
            filled(StepCostOut, terms, model=STEP_COST_MODEL, fitted=list(terms.fitted)) if terms is not None else None
        ),
        schedule=schedule_out(p, k_max, batch_max, fitted) if p is not None else None,
        holdout_error=fit.holdout_error,
        holdout_batches=fit.holdout_folds,
        query=fitted_query(fit.bandwidth_efficiency, fit.compute_efficiency, fit.overhead_us, measured),
        accuracy=accuracy_out(fit.setup, measured),
        notes=notes,
    )
