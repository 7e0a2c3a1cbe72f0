"""When verification stops being free: cost regimes, batch size and the roofline (DESIGN.md section 1)."""

from __future__ import annotations

import inspect
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import TypeAdapter, ValidationError

from app.model.presets import ACCELERATORS, MODELS, WEIGHT_FORMATS
from app.model.regimes import RegimeName, make_regime
from app.web.api.params import C, K, KMax, P
from app.web.api.setup_params import (
    Batch,
    BatchMax,
    Setup,
    _choice_query,
    preset_overrides,
    roofline_setup,
)
from app.web.core.errors import parameter_error
from app.web.pages.page_format import js_number, js_round, js_string
from app.web.schemas.regimes import BatchSweepOut, PresetList, ScheduleOut, TableOut, VerificationCostOut
from app.web.services import regimes as regimes_report
from app.web.services.regimes import (
    KV_CACHE_FORMATS,
    OVERRIDE_PREFIXES,
    BuiltSetup,
    RegimeRequest,
    SetupError,
    SetupRequest,
    build_setup,
    p_values_for,
    presets_out,
    schedule_csv,
    schedule_out,
    schedule_rows,
    sweep_out,
    sweep_readouts,
    table_csv,
    table_sides,
    table_summary,
    two_regime_table,
    verification_out,
)

router = APIRouter(prefix="/api/v1", tags=["regimes"])
logger = logging.getLogger(__name__)

# Caps on the work of one request; the batch, table and device caps are shared with the command line.
MAX_BATCH = regimes_report.MAX_BATCH
MAX_TABLE_ROWS = regimes_report.MAX_TABLE_ROWS
MAX_TABLE_K = regimes_report.MAX_TABLE_K
MAX_DEVICES = regimes_report.MAX_DEVICES
MAX_POINTS = 1024

DEFAULT_P = 0.8
DEFAULT_K = 4
DEFAULT_K_MAX = 8
DEFAULT_TABLE_C = 0.15
DEFAULT_POINTS = 161
DEFAULT_TABLE_P_MIN = 0.5
DEFAULT_TABLE_P_MAX = 0.95
DEFAULT_TABLE_P_STEP = 0.05


# The setup parameters (and their bounds) live in app/web/api/setup_params.py, shared with other routers.
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
    points: Points = DEFAULT_POINTS,
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
    p_min: Annotated[
        float, Query(ge=0.0, le=1.0, allow_inf_nan=False, description="First row's p, 0 to 1.")
    ] = DEFAULT_TABLE_P_MIN,
    p_max: Annotated[
        float, Query(ge=0.0, le=1.0, allow_inf_nan=False, description="Last row's p, 0 to 1.")
    ] = DEFAULT_TABLE_P_MAX,
    p_step: Annotated[
        float,
        Query(
            ge=0.001,
            le=1.0,
            allow_inf_nan=False,
            description=f"Row spacing, 0.001 to 1; at most {MAX_TABLE_ROWS} rows.",
        ),
    ] = DEFAULT_TABLE_P_STEP,
    k_max: Annotated[
        int, Query(ge=1, le=MAX_TABLE_K, description=f"Columns k = 1..k_max, 1 to {MAX_TABLE_K}.")
    ] = DEFAULT_K_MAX,
    p: P = DEFAULT_P,
    k: K = DEFAULT_K,
    format: FormatQuery = "json",
) -> TableOut | Response:
    """Speedup over p x k under two named regimes side by side (and both at p, k); CSV with format=csv."""
    chosen_format = _format(format)
    request_a = RegimeRequest(_regime_name(regime_a, "regime_a"), beta_a, batch_a)
    request_b = RegimeRequest(_regime_name(regime_b, "regime_b"), beta_b, batch_b)
    try:
        rows = p_values_for(p_min, p_max, p_step, MAX_TABLE_ROWS)
    except SetupError as error:
        raise parameter_error(error.name, error.message) from error
    table = two_regime_table(request_a, request_b, c, rows, k_max, built, marked_p=p, marked_k=k)
    return _csv(table_csv(table), "speedup-table.csv") if chosen_format == "csv" else table


# ---------------------------------------------------------------------------
# First paint of the page section (templates/sections/regimes.html): the rg_* keys of the page's URL read the way
# static/js/regimes.js reads them, each value checked as the API parameter of the same name checks it (a value the
# script would keep but the API refuses falls back to the default), and the numbers from the builders above.

PAGE_PREFIX = "rg_"
PAGE_SWEEP_K_MAX = 12  # regimes.js K_MAX: best k of the chart's sweep
PAGE_TABLE_K_MAX = 8  # regimes.js TABLE_K_MAX: the schedule and the two tables
PAGE_K_LOW, PAGE_K_HIGH = 1, 16  # the k slider
PAGE_BATCH_POSITIONS = 100  # batch slider positions 0..100; batch = round(2 ** (position / 10)), 1 to 1024

# Labels and input steps of the editable preset fields, as regimes.js writes them.
PAGE_FIELDS: dict[str, tuple[str, str]] = {
    "bandwidth_tb_s": ("Bandwidth (TB/s)", "0.001"),
    "bf16_tflops": ("Dense BF16 TFLOPS", "0.1"),
    "memory_gb": ("Memory (GB)", "1"),
    "total_params_b": ("Total parameters (B)", "0.01"),
    "active_params_b": ("Active parameters (B)", "0.01"),
    "layers": ("Layers", "1"),
    "query_heads": ("Query heads", "1"),
    "kv_heads": ("KV heads", "1"),
    "head_dim": ("Head dim", "1"),
    "kv_tensors": ("KV tensors (2 = K and V, 1 = latent)", "1"),
    "experts": ("Experts (1 = dense)", "1"),
    "experts_per_token": ("Experts per token", "1"),
}

# What an <input type="number"> keeps (an HTML valid floating-point number), and what JavaScript's Number() parses.
HTML_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
JS_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")

Checker = tuple["TypeAdapter[Any]", Any]


def _api_checks(handler: Callable[..., Any], names: Iterable[str]) -> dict[str, Checker]:
    """Validators and defaults of a handler's query parameters: the page accepts exactly what the API accepts."""
    parameters = inspect.signature(handler, eval_str=True).parameters
    return {name: (TypeAdapter(parameters[name].annotation), parameters[name].default) for name in names}


SETUP_NUMBERS = ("devices", "context", "bandwidth_efficiency", "compute_efficiency", "overhead_us")
TABLE_NUMBERS = ("beta_a", "beta_b", "batch_a", "batch_b", "c")
SETUP_CHECKS = _api_checks(roofline_setup, ("hw", "model", "draft", "weights", "kv_cache", *SETUP_NUMBERS))
TABLE_CHECKS = _api_checks(get_table, ("regime_a", "regime_b", *TABLE_NUMBERS))
OVERRIDE_CHECKS = _api_checks(
    preset_overrides, [f"{prefix}_{field}" for prefix, fields in OVERRIDE_PREFIXES.items() for field in fields]
)
PAGE_CHOICES: dict[str, list[str]] = {
    "hw": list(ACCELERATORS),
    "model": list(MODELS),
    "draft": list(MODELS),
    "weights": list(WEIGHT_FORMATS),
    "kv_cache": list(KV_CACHE_FORMATS),
    "regime_a": REGIME_NAMES,
    "regime_b": REGIME_NAMES,
}
PAGE_NUMBERS = (*SETUP_NUMBERS, *TABLE_NUMBERS)  # in the script's order
PAGE_CHECKS = {**SETUP_CHECKS, **TABLE_CHECKS}
PAGE_OPTIONS: dict[str, list[tuple[str, str]]] = {
    "hw": [(key, accelerator.name) for key, accelerator in ACCELERATORS.items()],
    "model": [(key, model.name) for key, model in MODELS.items()],
    "draft": [(key, model.name) for key, model in MODELS.items()],
    "weights": [(key, f"{key} ({js_string(size)} B)") for key, size in WEIGHT_FORMATS.items()],
    "kv_cache": [(key, f"{key} ({js_string(size)} B)") for key, size in KV_CACHE_FORMATS.items()],
    "regime_a": [(name, name) for name in REGIME_NAMES],
    "regime_b": [(name, name) for name in REGIME_NAMES],
}


@dataclass(frozen=True)
class FieldInput:
    """One editable preset field as the script builds it: the preset's value, or the URL's edit."""

    name: str
    field: str
    label: str
    step: str
    value: str
    edited: bool


@dataclass(frozen=True)
class PageState:
    """The section's controls as the script would set them from the URL."""

    choices: dict[str, str]
    numbers: dict[str, int | float]
    overrides: dict[str, int | float]
    opened: frozenset[str]
    p: float
    k: int
    batch_position: int

    @property
    def batch(self) -> int:
        return min(MAX_BATCH, max(1, js_round(2 ** (self.batch_position / 10))))


def _js_number(raw: str) -> float | None:
    """JavaScript's Number(raw) when finite, else None."""
    value = js_number(raw)
    return value if math.isfinite(value) else None


def _url_value(query: Mapping[str, str], name: str) -> str | None:
    """The first value of rg_<name> (as URLSearchParams.get), None when missing or blank."""
    getlist = getattr(query, "getlist", None)
    values = getlist(PAGE_PREFIX + name) if callable(getlist) else [query.get(PAGE_PREFIX + name)]
    raw = values[0] if values else None
    return raw if isinstance(raw, str) and raw.strip() else None


def _checked(check: Checker, raw: str | None) -> Any:
    """A number input's value: kept when the input keeps it and the API parameter accepts it."""
    adapter, default = check
    if raw is None or not HTML_NUMBER.fullmatch(raw) or _js_number(raw) is None:
        return default
    try:
        return adapter.validate_python(raw)
    except ValidationError:
        return default


def _slider_p(raw: str | None) -> float:
    value = None if raw is None else _js_number(raw)
    if raw is None or value is None or not 0 <= value <= 1:
        return DEFAULT_P
    text = raw.strip()
    exact = Decimal(int(text, 0)) if JS_RADIX.fullmatch(text) else Decimal(text)
    return float(exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))  # the slider's step


def _slider_integer(raw: str | None, low: int, high: int) -> int | None:
    value = None if raw is None else _js_number(raw)
    return int(value) if value is not None and value.is_integer() and low <= value <= high else None


def parse_page_state(query: Mapping[str, str]) -> PageState:
    """The section's state from the page URL; anything missing, malformed or refused by the API is the default."""
    choices = {}
    for name, allowed in PAGE_CHOICES.items():
        raw = _url_value(query, name)
        choices[name] = raw if raw in allowed else PAGE_CHECKS[name][1]
    numbers = {name: _checked(PAGE_CHECKS[name], _url_value(query, name)) for name in PAGE_NUMBERS}
    overrides: dict[str, int | float] = {}
    opened = set()
    presets = {"hw": ACCELERATORS[choices["hw"]], "model": MODELS[choices["model"]], "draft": MODELS[choices["draft"]]}
    for name, check in OVERRIDE_CHECKS.items():
        raw = _url_value(query, name)
        group, field_name = name.split("_", 1)
        if raw is not None and _js_number(raw) is not None:
            opened.add(group)
        value = _checked(check, raw)
        if value is not None and value != getattr(presets[group], field_name):
            overrides[name] = value
    k = _slider_integer(_url_value(query, "k"), PAGE_K_LOW, PAGE_K_HIGH)
    batch = _slider_integer(_url_value(query, "batch"), 1, MAX_BATCH)
    return PageState(
        choices=choices,
        numbers=numbers,
        overrides=overrides,
        opened=frozenset(opened),
        p=_slider_p(_url_value(query, "p")),
        k=DEFAULT_K if k is None else k,
        batch_position=js_round(10 * math.log2(batch)) if batch is not None else 0,
    )


def _setup_request(state: PageState) -> SetupRequest:
    choices, numbers = state.choices, state.numbers
    return SetupRequest(
        hw=choices["hw"],
        model=choices["model"],
        draft=choices["draft"],
        weights=choices["weights"],
        kv_cache=choices["kv_cache"],
        devices=int(numbers["devices"]),
        context=int(numbers["context"]),
        bandwidth_efficiency=float(numbers["bandwidth_efficiency"]),
        compute_efficiency=float(numbers["compute_efficiency"]),
        overhead_us=float(numbers["overhead_us"]),
        overrides=state.overrides,
    )


def _page_setup(state: PageState) -> tuple[PageState, BuiltSetup]:
    """The roofline of the state; an edit that breaks a rule between fields is dropped, as the preset value."""
    while True:
        try:
            return state, build_setup(_setup_request(state))
        except SetupError as error:
            if error.name not in state.overrides:
                raise
            state = replace(state, overrides={n: v for n, v in state.overrides.items() if n != error.name})


def _api_link(path: str, params: list[tuple[str, str]]) -> str:
    return f"{path}?{urlencode(params)}"


def _page_context(state: PageState) -> dict[str, Any]:
    state, built = _page_setup(state)
    choices, numbers = state.choices, state.numbers
    sweep = sweep_out(state.p, state.k, PAGE_SWEEP_K_MAX, MAX_BATCH, state.batch, DEFAULT_POINTS, built)
    schedule = schedule_out(state.p, PAGE_TABLE_K_MAX, MAX_BATCH, built)
    rows = p_values_for(DEFAULT_TABLE_P_MIN, DEFAULT_TABLE_P_MAX, DEFAULT_TABLE_P_STEP, MAX_TABLE_ROWS)
    side_a, side_b = (
        RegimeRequest(
            RegimeName(choices[f"regime_{side}"]), float(numbers[f"beta_{side}"]), int(numbers[f"batch_{side}"])
        )
        for side in ("a", "b")
    )
    table = two_regime_table(side_a, side_b, float(numbers["c"]), rows, PAGE_TABLE_K_MAX, built, state.p, state.k)

    shown = {name: js_string(value) for name, value in numbers.items()}
    groups = {}
    for group, fields in OVERRIDE_PREFIXES.items():
        preset = ACCELERATORS[choices[group]] if group == "hw" else MODELS[choices[group]]
        inputs = []
        for field_name in fields:
            name = f"{group}_{field_name}"
            value = state.overrides.get(name, getattr(preset, field_name))
            label, step = PAGE_FIELDS[field_name]
            inputs.append(FieldInput(name, field_name, label, step, js_string(value), name in state.overrides))
        groups[group] = {"open": group in state.opened, "inputs": inputs}

    roofline = [(name, choices[name]) for name in ("hw", "model", "draft", "weights", "kv_cache")]
    roofline += [(name, shown[name]) for name in SETUP_NUMBERS]
    roofline += [(name, js_string(value)) for name, value in state.overrides.items()]
    schedule_params = [*roofline, ("p", js_string(state.p)), ("k_max", str(PAGE_TABLE_K_MAX))]
    table_params = [*roofline, *((name, choices[name]) for name in ("regime_a", "regime_b"))]
    table_params += [(name, shown[name]) for name in TABLE_NUMBERS] + [("k_max", str(PAGE_TABLE_K_MAX))]
    return {
        "choices": {name: {"value": choices[name], "options": PAGE_OPTIONS[name]} for name in PAGE_CHOICES},
        "numbers": shown,
        "devices_placeholder": str(built.description.devices),
        "fields": groups,
        "p": js_string(state.p),
        "k": str(state.k),
        "batch_position": str(state.batch_position),
        "readouts": sweep_readouts(sweep),
        "schedule": schedule_rows(schedule),
        "tables": dict(zip(("a", "b"), table_sides(table), strict=True)),
        "summary": table_summary(table),
        "regime_inputs": {
            side: {"beta": choices[f"regime_{side}"] == "linear", "batch": choices[f"regime_{side}"] == "roofline"}
            for side in ("a", "b")
        },
        "links": {
            "schedule_csv": _api_link("/api/v1/regimes/schedule", [*schedule_params, ("format", "csv")]),
            "schedule_json": _api_link("/api/v1/regimes/schedule", schedule_params),
            "table_csv": _api_link("/api/v1/regimes/table", [*table_params, ("format", "csv")]),
            "table_json": _api_link("/api/v1/regimes/table", table_params),
        },
    }


DEFAULT_PAGE_STATE = parse_page_state({})


def page_context(query: Mapping[str, str]) -> dict[str, Any]:
    """First-paint numbers of this family's page section, from the page's URL state; never raises."""
    try:
        return _page_context(parse_page_state(query))
    except Exception:  # a URL must never break the page: its section falls back to the defaults
        logger.warning("regimes section: URL state fell back to the defaults", exc_info=True)
    try:
        return _page_context(DEFAULT_PAGE_STATE)
    except Exception:  # then the script fills the section in, as without a first paint
        logger.exception("regimes section: no first paint")
        return {}
