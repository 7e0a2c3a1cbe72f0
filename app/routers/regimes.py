"""When verification stops being free: cost regimes, batch size and the roofline (DESIGN.md section 1)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import Response

from app import regimes_report
from app.errors import parameter_error
from app.params import C, K, KMax, P
from app.presets import ACCELERATOR_FIELDS, ACCELERATORS, MODEL_FIELDS, MODELS, WEIGHT_FORMATS
from app.regimes import RegimeName, make_regime
from app.regimes_report import (
    DEFAULT_DRAFT,
    DEFAULT_HW,
    DEFAULT_MODEL,
    DEFAULTS,
    KV_CACHE_FORMATS,
    BuiltSetup,
    RegimeRequest,
    SetupError,
    SetupRequest,
    build_regime,
    build_setup,
    p_values_for,
    presets_out,
    schedule_csv,
    schedule_out,
    sweep_out,
    table_csv,
    table_out,
    verification_out,
)
from app.schemas.regimes import BatchSweepOut, PresetList, ScheduleOut, TableOut, VerificationCostOut

router = APIRouter(prefix="/api/v1", tags=["regimes"])

# Caps on the work of one request; the batch, table and device caps are shared with the command line.
MAX_BATCH = regimes_report.MAX_BATCH
MAX_TABLE_ROWS = regimes_report.MAX_TABLE_ROWS
MAX_TABLE_K = regimes_report.MAX_TABLE_K
MAX_DEVICES = regimes_report.MAX_DEVICES
MAX_CONTEXT = 1_048_576
MAX_OVERHEAD_US = 100_000.0
MAX_POINTS = 1024

DEFAULT_P = 0.8
DEFAULT_K = 4
DEFAULT_K_MAX = 8
DEFAULT_TABLE_C = 0.15


def _choice_query(allowed: list[str], description: str) -> Any:
    """A string parameter listed as an enum in the schema and checked by the handler (422 names it)."""
    return Query(description=f"{description} One of: {', '.join(allowed)}.", json_schema_extra={"enum": allowed})


# Bounds of every editable preset field: (type, lower bound, inclusive?, upper bound, description).
FIELD_BOUNDS: dict[str, tuple[type, float, bool, float, str]] = {
    "bandwidth_tb_s": (float, 0.001, True, 1000.0, "peak memory bandwidth per device, TB/s"),
    "bf16_tflops": (float, 0.001, True, 1_000_000.0, "peak dense BF16 TFLOPS per device"),
    "memory_gb": (float, 0.001, True, 1_000_000.0, "memory per device, GB"),
    "total_params_b": (float, 0.000001, True, 100_000.0, "total parameters, billions"),
    "active_params_b": (float, 0.000001, True, 100_000.0, "parameters used per token, billions"),
    "layers": (int, 1, True, 10_000, "transformer layers"),
    "query_heads": (int, 1, True, 4096, "attention query heads"),
    "kv_heads": (int, 1, True, 4096, "cached key/value heads"),
    "head_dim": (int, 1, True, 16_384, "width of a cached head"),
    "kv_tensors": (int, 1, True, 2, "2 = keys and values, 1 = shared latent"),
    "experts": (int, 1, True, 4096, "routed experts per layer (1 = dense)"),
    "experts_per_token": (int, 1, True, 4096, "experts each token uses"),
}
PRESET_OWNERS = {"hw": "accelerator", "model": "target model", "draft": "draft model"}


def _override_parameters() -> list[inspect.Parameter]:
    parameters = []
    for prefix, fields in (("hw", ACCELERATOR_FIELDS), ("model", MODEL_FIELDS), ("draft", MODEL_FIELDS)):
        for field in fields:
            kind, low, inclusive, high, text = FIELD_BOUNDS[field]
            span = f"{low:g} to {high:g}" if inclusive else f"above {low:g}, at most {high:g}"
            query = Query(
                ge=low if inclusive else None,
                gt=None if inclusive else low,
                le=high,
                allow_inf_nan=False if kind is float else None,
                description=f"Override the {PRESET_OWNERS[prefix]} preset's {text} ({span}).",
            )
            annotation = Annotated[kind | None, query]  # type: ignore[valid-type]
            parameters.append(
                inspect.Parameter(
                    f"{prefix}_{field}", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
                )
            )
    return parameters


def preset_overrides(**values: float | int | None) -> dict[str, float | int | None]:
    return {name: value for name, value in values.items() if value is not None}


preset_overrides.__signature__ = inspect.Signature(_override_parameters())  # type: ignore[attr-defined]


def roofline_setup(
    overrides: Annotated[dict[str, float | int | None], Depends(preset_overrides)],
    hw: Annotated[str, _choice_query(list(ACCELERATORS), "Accelerator preset.")] = DEFAULT_HW,
    model: Annotated[str, _choice_query(list(MODELS), "Target model preset.")] = DEFAULT_MODEL,
    draft: Annotated[str, _choice_query(list(MODELS), "Draft model preset.")] = DEFAULT_DRAFT,
    weights: Annotated[
        str, _choice_query(list(WEIGHT_FORMATS), "Weight format of the target (and of the draft by default).")
    ] = "bf16",
    draft_weights: Annotated[
        str | None, _choice_query(list(WEIGHT_FORMATS), "Weight format of the draft; defaults to weights.")
    ] = None,
    kv_cache: Annotated[str, _choice_query(list(KV_CACHE_FORMATS), "KV-cache format.")] = "bf16",
    devices: Annotated[
        int,
        Query(
            ge=0, le=MAX_DEVICES, description=f"Devices in tensor parallel, 0 (auto: fewest that fit) to {MAX_DEVICES}."
        ),
    ] = 0,
    context: Annotated[
        int, Query(ge=0, le=MAX_CONTEXT, description=f"Tokens of context per sequence, 0 to {MAX_CONTEXT:,}.")
    ] = DEFAULTS.context_tokens,
    bandwidth_efficiency: Annotated[
        float, Query(ge=0.01, le=1.0, allow_inf_nan=False, description="Achieved share of peak bandwidth, 0.01 to 1.")
    ] = DEFAULTS.bandwidth_efficiency,
    compute_efficiency: Annotated[
        float, Query(ge=0.01, le=1.0, allow_inf_nan=False, description="Achieved share of peak FLOPS, 0.01 to 1.")
    ] = DEFAULTS.compute_efficiency,
    overhead_us: Annotated[
        float,
        Query(
            ge=0.0,
            le=MAX_OVERHEAD_US,
            allow_inf_nan=False,
            description=f"Fixed time per forward pass, microseconds, 0 to {MAX_OVERHEAD_US:,.0f}.",
        ),
    ] = DEFAULTS.step_overhead_us,
) -> BuiltSetup:
    request = SetupRequest(
        hw=hw,
        model=model,
        draft=draft,
        weights=weights,
        draft_weights=draft_weights,
        kv_cache=kv_cache,
        devices=devices,
        context=context,
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
        overhead_us=overhead_us,
        overrides=overrides,
    )
    try:
        return build_setup(request)
    except SetupError as error:
        raise parameter_error(error.name, error.message) from error


Setup = Annotated[BuiltSetup, Depends(roofline_setup)]
Batch = Annotated[int, Query(ge=1, le=MAX_BATCH, description=f"Batch size (sequences per step), 1 to {MAX_BATCH}.")]
BatchMax = Annotated[int, Query(ge=1, le=MAX_BATCH, description=f"Largest batch size swept, 1 to {MAX_BATCH}.")]
Points = Annotated[
    int, Query(ge=2, le=MAX_POINTS, description=f"Log-spaced batch sizes returned for plotting, 2 to {MAX_POINTS}.")
]
Beta = Annotated[
    float, Query(ge=0.0, le=1.0, allow_inf_nan=False, description="Linear regime: v(k) = 1 + beta k, 0 to 1.")
]
REGIME_NAMES = [name.value for name in RegimeName]


def _regime_name(name: str, parameter: str) -> RegimeName:
    if name not in REGIME_NAMES:
        raise parameter_error(parameter, f"must be one of {', '.join(REGIME_NAMES)}; got {name!r}")
    return RegimeName(name)


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
FormatQuery = Annotated[str, _choice_query(["json", "csv"], "Response format.")]


@router.get("/presets", response_model=PresetList)
def get_presets() -> PresetList:
    """Accelerator and model presets, weight and KV-cache formats, regime names and the default setup."""
    return presets_out()


@router.get("/regimes/verification-cost", response_model=VerificationCostOut)
def get_verification_cost(
    built: Setup,
    regime: Annotated[str, _choice_query(REGIME_NAMES, "Cost regime.")] = "roofline",
    p: P = DEFAULT_P,
    k: K = DEFAULT_K,
    c: C = DEFAULT_TABLE_C,
    beta: Beta = 0.5,
    batch: Batch = 1,
    k_max: KMax = DEFAULT_K_MAX,
) -> VerificationCostOut:
    """Verification cost v(k), cost per cycle and speedup for k = 0..k_max under one regime."""
    name = _regime_name(regime, "regime")
    chosen = make_regime(name, draft_cost=c, beta=beta, setup=built.setup, batch=batch)
    return verification_out(chosen, p, k, k_max, built)


@router.get("/regimes/speedup-vs-batch", response_model=BatchSweepOut)
def get_speedup_vs_batch(
    built: Setup,
    p: P = DEFAULT_P,
    k: K = DEFAULT_K,
    k_max: KMax = DEFAULT_K_MAX,
    batch_max: BatchMax = MAX_BATCH,
    batch: Batch = 1,
    points: Points = 161,
) -> BatchSweepOut:
    """Roofline speedup against batch size, the crossover batch and the best k at every batch."""
    if batch > batch_max:
        raise parameter_error("batch", f"must be at most batch_max ({batch_max}); got {batch}")
    return sweep_out(p, k, k_max, batch_max, batch, points, built)


@router.get("/regimes/schedule", response_model=ScheduleOut, responses=CSV_RESPONSE)
def get_schedule(
    built: Setup,
    p: P = DEFAULT_P,
    k_max: KMax = DEFAULT_K_MAX,
    batch_max: BatchMax = MAX_BATCH,
    format: FormatQuery = "json",
) -> ScheduleOut | Response:
    """Best draft length per batch size as thresholds (batch from -> k, 0 = off); CSV with format=csv."""
    schedule = schedule_out(p, k_max, batch_max, built)
    return _csv(schedule_csv(schedule), "speculation-schedule.csv") if _format(format) == "csv" else schedule


@router.get("/regimes/table", response_model=TableOut, responses=CSV_RESPONSE)
def get_table(
    built: Setup,
    regime_a: Annotated[str, _choice_query(REGIME_NAMES, "Left-hand regime.")] = "memory-bound",
    regime_b: Annotated[str, _choice_query(REGIME_NAMES, "Right-hand regime.")] = "compute-bound",
    c: C = DEFAULT_TABLE_C,
    beta_a: Beta = 0.5,
    beta_b: Beta = 0.5,
    batch_a: Batch = 1,
    batch_b: Batch = 256,
    p_min: Annotated[float, Query(ge=0.0, le=1.0, allow_inf_nan=False, description="First row's p, 0 to 1.")] = 0.5,
    p_max: Annotated[float, Query(ge=0.0, le=1.0, allow_inf_nan=False, description="Last row's p, 0 to 1.")] = 0.95,
    p_step: Annotated[
        float,
        Query(
            ge=0.001,
            le=1.0,
            allow_inf_nan=False,
            description=f"Row spacing, 0.001 to 1; at most {MAX_TABLE_ROWS} rows.",
        ),
    ] = 0.05,
    k_max: Annotated[int, Query(ge=1, le=MAX_TABLE_K, description=f"Columns k = 1..k_max, 1 to {MAX_TABLE_K}.")] = 8,
    p: P = DEFAULT_P,
    k: K = DEFAULT_K,
    format: FormatQuery = "json",
) -> TableOut | Response:
    """Speedup over p x k under two named regimes side by side (and both at p, k); CSV with format=csv."""
    chosen_format = _format(format)
    side_a = build_regime(RegimeRequest(_regime_name(regime_a, "regime_a"), beta_a, batch_a), c, built)
    side_b = build_regime(RegimeRequest(_regime_name(regime_b, "regime_b"), beta_b, batch_b), c, built)
    try:
        rows = p_values_for(p_min, p_max, p_step, MAX_TABLE_ROWS)
    except SetupError as error:
        raise parameter_error(error.name, error.message) from error
    table = table_out(rows, k_max, side_a, side_b, built, marked_p=p, marked_k=k)
    return _csv(table_csv(table), "speedup-table.csv") if chosen_format == "csv" else table


def page_context(query: Mapping[str, str]) -> dict[str, Any]:
    """First-paint numbers of this family's page section, from the page's URL state; never raises."""
    return {}
