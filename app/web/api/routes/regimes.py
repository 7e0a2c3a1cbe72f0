"""When verification stops being free: cost regimes, batch size and the roofline (DESIGN.md section 1)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from app.model import limits
from app.model.cost.regimes import make_regime
from app.service import core_inputs, plan_inputs
from app.service import regime_inputs as inputs
from app.service.published import published_out
from app.service.regimes import (
    RegimeRequest,
    SetupError,
    p_values_for,
    presets_out,
    schedule_csv,
    schedule_out,
    sweep_out,
    table_csv,
    two_regime_table,
    verification_out,
)
from app.service.schemas.published import PublishedOut
from app.service.schemas.regimes import BatchSweepOut, PresetList, ScheduleOut, TableOut, VerificationCostOut
from app.web.api.inputs import takes
from app.web.api.plan_params import (
    ACCEPTANCE_RULES,
    PROFILE_RULE,
    GivenP,
)
from app.web.api.setup_params import (
    RULES,
    SETUP_RULES,
    Setup,
)
from app.web.api.text_params import regime_name
from app.web.core.errors import parameter_error, with_rules
from app.web.core.heavy import HEAVY, in_worker_process

router = APIRouter(prefix="/api/v1", tags=["regimes"])

# Caps on the work of one request; the batch, table and device caps are shared with the command line.


# rate and mean_length are measured at the sweep's own k
SWEEP_RULES = RULES + ACCEPTANCE_RULES + PROFILE_RULE + SETUP_RULES + "\n- `batch` is at most `batch_max`."
TABLE_RULES = (
    RULES
    + SETUP_RULES
    + (f"\n- `p_max` is at least `p_min`;\n- `p_step` gives at most {limits.MAX_TABLE_ROWS} rows from p_min to p_max.")
)
ROOFLINE_RULES = RULES + SETUP_RULES
SCHEDULE_RULES = RULES + ACCEPTANCE_RULES + PROFILE_RULE + SETUP_RULES


def _format(value: str) -> str:
    if value not in ("json", "csv"):
        raise parameter_error("format", f"must be json or csv; got {value!r}")
    return value


def _csv(text: str, filename: str) -> Response:
    return Response(
        text,
        media_type="text/csv; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{filename}"'},
    )


CSV_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "JSON, or CSV with format=csv."}
}


@router.get(
    "/published",
    summary="Every published measurement against the cost model",
    response_model=PublishedOut,
)
def get_published() -> PublishedOut:
    """Every published point with its source, class, measured speedup and the cost model's prediction from terms
    fitted on every other source (leave-one-source-out), the points it cannot price with the reason, each class's
    error and each published batch sweep's crossover, measured and predicted with its interval."""
    return published_out()


@router.get("/presets", summary="Hardware and model presets", response_model=PresetList)
def get_presets() -> PresetList:
    """Accelerator and model presets, weight and KV-cache formats, regime names and the default setup."""
    return presets_out()


@router.get(
    "/regimes/verification-cost",
    summary="Verification cost v(k) and speedup under one regime",
    response_model=VerificationCostOut,
    dependencies=HEAVY,
)
@in_worker_process
@with_rules(ROOFLINE_RULES)
@takes(inputs.REGIME, inputs.P, inputs.K, inputs.C, inputs.BETA, inputs.BATCH, inputs.K_MAX)
def get_verification_cost(
    built: Setup, regime: str, p: float, k: int, c: float, beta: float, batch: int, k_max: int
) -> VerificationCostOut:
    """Verification cost v(k), cost per cycle and speedup for k = 0..k_max under one regime."""
    name = regime_name(regime, "regime")
    chosen = make_regime(name, draft_cost=c, beta=beta, setup=built.setup, batch=batch)
    return verification_out(chosen, p, k, k_max, built)


@router.get(
    "/regimes/speedup-vs-batch", summary="Speedup against batch size", response_model=BatchSweepOut, dependencies=HEAVY
)
@in_worker_process
@with_rules(SWEEP_RULES)
@takes(
    inputs.K,
    inputs.K_MAX,
    inputs.BATCH_MAX,
    inputs.BATCH,
    inputs.POINTS,
    plan_inputs.RATE,
    plan_inputs.MEAN_LENGTH,
    plan_inputs.PROFILE,
)
def get_speedup_vs_batch(
    built: Setup,
    p: GivenP,
    k: int,
    k_max: int,
    batch_max: int,
    batch: int,
    points: int,
    rate: float | None,
    mean_length: float | None,
    profile: str,
) -> BatchSweepOut:
    """Roofline speedup against batch size, the crossover batch and the best k at every batch.

    The acceptance is p, or a draft acceptance rate or a mean acceptance length measured at k; with a measured
    profile, tokens per verification come from it (as for the schedule and engine-config)."""
    acceptance = plan_inputs.measured_acceptance(p, rate, mean_length, k, profile)
    if batch > batch_max:
        raise parameter_error("batch", f"must be at most batch_max ({batch_max}); got {batch}")
    return sweep_out(acceptance, k, k_max, batch_max, batch, points, built)


@router.get(
    "/regimes/schedule",
    summary="Best k for every batch size",
    response_model=ScheduleOut,
    responses=CSV_RESPONSE,
    dependencies=HEAVY,
)
@in_worker_process
@with_rules(SCHEDULE_RULES)
@takes(
    core_inputs.K_MAX,
    inputs.BATCH_MAX,
    inputs.FORMAT,
    plan_inputs.PROFILE,
    plan_inputs.RATE,
    plan_inputs.MEAN_LENGTH,
    plan_inputs.K,
)
def get_schedule(
    built: Setup,
    p: GivenP,
    k_max: int,
    batch_max: int,
    format: str,
    profile: str,
    rate: float | None,
    mean_length: float | None,
    k: int | None,
) -> ScheduleOut | Response:
    """Best draft length per batch size as thresholds (batch from -> k, 0 = off); CSV with format=csv.

    The acceptance is p, or a draft acceptance rate or a mean acceptance length measured at k; with a measured
    profile, tokens per verification come from it (as for engine-config)."""
    schedule = schedule_out(plan_inputs.measured_acceptance(p, rate, mean_length, k, profile), k_max, batch_max, built)
    return _csv(schedule_csv(schedule), "speculation-schedule.csv") if _format(format) == "csv" else schedule


@router.get(
    "/regimes/table",
    summary="Speedup over p and k under two regimes",
    response_model=TableOut,
    responses=CSV_RESPONSE,
    dependencies=HEAVY,
)
@in_worker_process
@with_rules(TABLE_RULES)
@takes(
    *inputs.LEFT[:1],
    *inputs.RIGHT[:1],
    inputs.C,
    *inputs.LEFT[1:],
    *inputs.RIGHT[1:],
    *inputs.ROWS,
    inputs.P,
    inputs.K,
    inputs.FORMAT,
)
def get_table(
    built: Setup,
    regime_a: str,
    regime_b: str,
    c: float,
    beta_a: float,
    beta_b: float,
    batch_a: int,
    batch_b: int,
    p_min: float,
    p_max: float,
    p_step: float,
    k_max: int,
    p: float,
    k: int,
    format: str,
) -> TableOut | Response:
    """Speedup over p x k under two named regimes side by side (and both at p, k); CSV with format=csv."""
    chosen_format = _format(format)
    request_a = RegimeRequest(regime_name(regime_a, "regime_a"), beta_a, batch_a)
    request_b = RegimeRequest(regime_name(regime_b, "regime_b"), beta_b, batch_b)
    try:
        rows = p_values_for(p_min, p_max, p_step, limits.MAX_TABLE_ROWS)
    except SetupError as error:
        raise parameter_error(error.name, error.message) from error
    table = two_regime_table(request_a, request_b, c, rows, k_max, built, marked_p=p, marked_k=k)
    return _csv(table_csv(table), "speedup-table.csv") if chosen_format == "csv" else table
