"""From serving metrics to a decision: calibration, draft sources and token trees."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from app.model import calibration, draft_sources, limits, trees
from app.model.calibration import CalibrationError, ErrorKind
from app.model.regimes import REGIME_NAMES as regime_names
from app.service import core_inputs
from app.service import decision_inputs as inputs
from app.service.decision import (
    CostRegime,
    calibration_out,
    cost_regime,
    sources_out,
    trees_out,
)
from app.service.decision_inputs import (
    ACCEPTANCE_PATTERN,
    OVERRIDES_PATTERN,
    WIDTHS_PATTERN,
)
from app.service.engines import BaselineError, calibrate_scrape
from app.service.schemas.decision import CalibrationOut, DraftSourcesOut, TreesOut
from app.web.api.bodies import read_capped
from app.web.api.inputs import takes
from app.web.api.params import Cost
from app.web.core.errors import parameter_error, with_rules
from app.web.core.heavy import HEAVY, in_worker_process

router = APIRouter(prefix="/api/v1", tags=["decision"])
Handler = TypeVar("Handler", bound=Callable[..., Any])

# Caps on the work and size of one request.
MAX_EXPOSITION_BYTES = calibration.MAX_EXPOSITION_BYTES  # per pasted exposition (metrics, baseline)
# metrics + baseline, each up to twice its length once JSON escapes quotes and newlines, + framing
MAX_BODY_BYTES = 4 * MAX_EXPOSITION_BYTES + 65_536
MAX_COUNT = inputs.MAX_COUNT
MAX_POSITIONS = calibration.MAX_POSITIONS
MAX_TREE_WIDTH = trees.MAX_WIDTH
MAX_TREE_WIDTHS = limits.MAX_TREE_WIDTHS
MAX_BATCH = limits.MAX_BATCH
MAX_TEXT_PARAMETER = inputs.MAX_TEXT

REGIME_NAMES = list(regime_names)


def _check_format(name: str, text: str, pattern: str, example: str) -> None:
    """The catch-all behind the detailed checks: the value matches the pattern its schema declares."""
    if not re.fullmatch(pattern, text):
        raise parameter_error(name, f"must match the pattern {pattern} (for example {example!r}); got {text!r}", text)


# Rules that tie parameters (or the values of one list) together: enforced by the handlers, listed in each
# operation's description because a schema cannot say them.
RULES = "\n\nRules between parameters (a 422 names the parameter):\n\n"
LENGTH_RULES = RULES + "- `length` is at most k + 1 (k drafts plus the bonus token)."
COUNTER_RULES = RULES + (
    "- `draft_tokens` is at most k x drafts and, when k is not given, a whole multiple of `drafts`;\n"
    "- `accepted` is at most draft_tokens;\n"
    "- `per_position` holds at most k values, none above the previous one nor above drafts, summing to accepted."
)
METRICS_RULES = RULES + (
    "- `metrics`: the body holds a vLLM /metrics exposition with spec-decode counters that agree with each other "
    "(and with k when it is given);\n"
    "- `baseline`: an earlier scrape of the same counters, none above the later one."
)
EXAMPLE_RULES = RULES + "- `drafts` is at most 1,000,000 when a `seed` asks for sampled counts."
SOURCES_RULES = RULES + "- `overrides` names each source at most once."
TREES_RULES = RULES + (
    "- `acceptance`: the values do not increase (P_1 >= P_2 >= ...) and sum to at most 1 (rules between the "
    "values of the list)."
)


def _regime(regime: str, c: float, beta: float, batch: int) -> CostRegime:
    if regime not in REGIME_NAMES:
        raise parameter_error("regime", f"must be one of {', '.join(REGIME_NAMES)}; got {regime!r}", regime)
    return cost_regime(regime, c, beta=beta, batch=batch)


def _text_parameter(name: str, text: str, limit: int = MAX_TEXT_PARAMETER) -> str:
    if len(text) > limit:
        raise parameter_error(name, f"must be at most {limit:,} characters; got {len(text):,}", text)
    return text


def _numbers(name: str, text: str, limit: int) -> list[float]:
    values = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            value = float(item)
        except ValueError:
            raise parameter_error(name, f"must be comma-separated numbers; got {item!r}", text) from None
        if not math.isfinite(value):
            raise parameter_error(name, f"must hold finite numbers; got {item!r}", text)
        values.append(value)
    if len(values) > limit:
        raise parameter_error(name, f"takes at most {limit} numbers; got {len(values)}", text)
    return values


# ---------------------------------------------------------------------------
# Calibration


def calibration_route(path: str, summary: str) -> Callable[[Handler], Handler]:
    """A GET that answers a calibration (heavy: in the worker processes)."""

    def register(handler: Handler) -> Handler:
        route = router.get(path, summary=summary, response_model=CalibrationOut, dependencies=HEAVY)
        return route(in_worker_process(handler))

    return register


@calibration_route("/calibrate/rate", "Acceptance p from a draft acceptance rate")
@takes(inputs.RATE, inputs.MEASURED_K, inputs.K_MAX)
def get_calibration_from_rate(rate: float, k: int, cost: Cost, k_max: int) -> CalibrationOut:
    """Infer p from a draft acceptance rate measured at draft length k; predict speedup for every k."""
    chosen = cost.priced()
    result = calibration.calibrate_from_rate(rate, k, chosen.c, k_max, chosen.verify)
    return calibration_out(result, chosen)


@calibration_route("/calibrate/length", "Acceptance p from a mean acceptance length")
@with_rules(LENGTH_RULES)
@takes(inputs.LENGTH, inputs.MEASURED_K, inputs.K_MAX)
def get_calibration_from_length(length: float, k: int, cost: Cost, k_max: int) -> CalibrationOut:
    """Infer p from a mean acceptance length (tokens per verification) at draft length k."""
    if length > k + 1:
        raise parameter_error("length", f"must be from 1 to k + 1 = {k + 1} at k = {k}; got {length}", length)
    chosen = cost.priced()
    result = calibration.calibrate_from_length(length, k, chosen.c, k_max, chosen.verify)
    return calibration_out(result, chosen)


def _counter_parameter(error: CalibrationError) -> str:
    if error.kind is ErrorKind.ZERO_DRAFTS:
        return "drafts"
    if error.kind is ErrorKind.UNKNOWN_K:
        return "draft_tokens"  # draft tokens per draft is not a whole number and k was not given
    if "position" in error.message:
        return "per_position"
    if "draft tokens" in error.message and "accepted" not in error.message:
        return "draft_tokens"
    return "accepted"


@calibration_route("/calibrate/counters", "Acceptance p from spec-decode counters")
@with_rules(COUNTER_RULES)
@takes(*inputs.COUNTERS, inputs.PER_POSITION, inputs.COUNTED_K, inputs.K_MAX)
def get_calibration_from_counters(
    drafts: float,
    draft_tokens: float,
    accepted: float,
    cost: Cost,
    per_position: str,
    k: int | None,
    k_max: int,
) -> CalibrationOut:
    """Infer p, per-position acceptance and the i.i.d. check from vLLM's spec-decode counter values."""
    if drafts < 1:
        raise parameter_error(
            "drafts", f"must be at least 1: a server that has not speculated yet has nothing to measure; got {drafts:g}"
        )
    positions = _numbers("per_position", _text_parameter("per_position", per_position), MAX_POSITIONS)
    if any(value < 0 or value > MAX_COUNT for value in positions):
        raise parameter_error("per_position", f"values must be from 0 to {MAX_COUNT:.0e}", per_position)
    _check_format("per_position", per_position, inputs.PER_POSITION_PATTERN, "900,700,400")
    counters = calibration.SpecDecodeCounters(
        schema="v1",
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted,
        accepted_per_position=tuple(positions),
    )
    chosen = cost.priced()
    try:
        result = calibration.calibrate_from_counters(counters, chosen.c, k_max, chosen.verify, k)
    except CalibrationError as error:
        raise parameter_error(_counter_parameter(error), error.message) from None
    return calibration_out(result, chosen, source="counters")


def _unprocessable(field: str, message: str, kind: str) -> JSONResponse:
    return JSONResponse(
        status_code=422,
        content={
            "detail": [{"loc": ["body", field], "msg": f"{field}: {message}", "type": "value_error", "kind": kind}]
        },
    )


async def _read_capped(request: Request) -> bytes | None:
    """The request body, or None as soon as it exceeds MAX_BODY_BYTES (never read in full)."""
    return await read_capped(request, MAX_BODY_BYTES)


def _texts_from_body(body: bytes, content_type: str) -> tuple[str, str | None] | JSONResponse:
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError:
        return _unprocessable("metrics", "must be UTF-8 text", "encoding")
    if "json" not in content_type:
        return decoded, None
    try:
        payload: Any = json.loads(decoded)
    except json.JSONDecodeError as error:
        return _unprocessable("metrics", f"the JSON body does not parse ({error.msg}, line {error.lineno})", "json")
    if not isinstance(payload, dict):
        return _unprocessable(
            "metrics", 'the JSON body must be an object {"metrics": "...", "baseline": "..."}', "json"
        )
    extra = sorted(set(payload) - {"metrics", "baseline"})
    if extra:
        return _unprocessable("metrics", f"unknown JSON fields {', '.join(extra)}; use metrics and baseline", "json")
    metrics, baseline = payload.get("metrics"), payload.get("baseline")
    if not isinstance(metrics, str):
        return _unprocessable("metrics", "is required: the /metrics text as a JSON string", "missing")
    if baseline is not None and not isinstance(baseline, str):
        return _unprocessable("baseline", "must be the earlier /metrics text as a JSON string, or null", "type")
    return metrics, baseline


METRICS_BODY = {
    "requestBody": {
        "required": True,
        "description": (
            f"The text a vLLM server returns at /metrics (Prometheus text format), at most {MAX_EXPOSITION_BYTES:,} "
            'bytes; or JSON {"metrics": "...", "baseline": "..."} where baseline is an earlier scrape to subtract.'
        ),
        "content": {
            "text/plain": {"schema": {"type": "string", "minLength": 1, "maxLength": MAX_EXPOSITION_BYTES}},
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["metrics"],
                    "additionalProperties": False,
                    "properties": {
                        "metrics": {"type": "string", "minLength": 1, "maxLength": MAX_EXPOSITION_BYTES},
                        "baseline": {"type": ["string", "null"], "maxLength": MAX_EXPOSITION_BYTES},
                    },
                }
            },
        },
    }
}


@router.post(
    "/calibrate/metrics",
    summary="Acceptance p from a pasted vLLM /metrics scrape",
    response_model=CalibrationOut,
    dependencies=HEAVY,
    openapi_extra=METRICS_BODY,
    responses={422: {"description": "Empty, malformed, unrelated, oversized or inconsistent exposition."}},
)
@with_rules(METRICS_RULES)
@takes(inputs.COUNTED_K, inputs.MODEL_NAME, inputs.K_MAX)
async def calibrate_metrics(
    request: Request, cost: Cost, k: int | None, model_name: str | None, k_max: int
) -> CalibrationOut | JSONResponse:
    """Infer p from a pasted vLLM /metrics exposition: per-position acceptance, i.i.d. check, best k."""
    chosen = cost.priced()
    body = await _read_capped(request)
    if body is None:
        return _unprocessable(
            "metrics",
            f"the body must be at most {MAX_BODY_BYTES:,} bytes (each exposition at most {MAX_EXPOSITION_BYTES:,})",
            ErrorKind.TOO_LARGE.value,
        )
    texts = _texts_from_body(body, request.headers.get("content-type", "").lower())
    if isinstance(texts, JSONResponse):
        return texts
    metrics, baseline = texts
    # Parsing up to a megabyte takes a while: keep it off the event loop.
    return await run_in_threadpool(_calibrate_texts, metrics, baseline, model_name, chosen, k_max, k)


def _calibrate_texts(
    metrics: str, baseline: str | None, model_name: str | None, chosen: CostRegime, k_max: int, k: int | None
) -> CalibrationOut | JSONResponse:
    try:
        result = calibrate_scrape(metrics, chosen.c, k_max, chosen.verify, k, baseline, model_name)
    except BaselineError as error:
        return _unprocessable("baseline", error.message, error.kind.value)
    except CalibrationError as error:
        return _unprocessable("metrics", error.message, error.kind.value)
    return calibration_out(result, chosen)


@router.get(
    "/calibrate/example-metrics",
    summary="An example vLLM /metrics scrape",
    response_class=PlainTextResponse,
    dependencies=HEAVY,
)
@in_worker_process
@with_rules(EXAMPLE_RULES)
@takes(*inputs.EXAMPLE)
def get_example_metrics(
    p: float, k: int, drafts: int, seed: int | None, engines: int, schema: str
) -> PlainTextResponse:
    """A synthetic vLLM /metrics exposition after i.i.d. acceptance p, to try the calibration on."""
    if schema not in inputs.EXAMPLE_SCHEMAS:
        raise parameter_error("schema", f"must be v1 or v0; got {schema!r}", schema)
    if seed is not None and drafts > 1_000_000:
        raise parameter_error("drafts", "must be at most 1,000,000 when sampled with a seed", drafts)
    text = calibration.example_exposition(p, k, drafts=drafts, seed=seed, engines=engines, schema=schema)
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")


# ---------------------------------------------------------------------------
# Draft sources


@router.get("/draft-sources", summary="Draft sources side by side", response_model=DraftSourcesOut)
@with_rules(SOURCES_RULES)
@takes(inputs.K_MAX, core_inputs.REGIME, core_inputs.BETA, core_inputs.COST_BATCH, inputs.SOURCE_OVERRIDES)
def get_draft_sources(k_max: int, regime: str, beta: float, batch: int, overrides: str) -> DraftSourcesOut:
    """Draft model, n-gram lookup, Medusa and EAGLE side by side: accepted length per unit of draft cost, best k."""
    return draft_sources_report(k_max, regime, beta, batch, overrides)


def draft_sources_report(k_max: int, regime: str, beta: float, batch: int, overrides: str) -> DraftSourcesOut:
    """GET /draft-sources once its parameters are in range; also the page's first paint."""
    try:
        edits = draft_sources.parse_overrides(_text_parameter("overrides", overrides))
        draft_sources.with_overrides(edits)
    except ValueError as error:
        raise parameter_error("overrides", str(error), overrides) from None
    _check_format("overrides", overrides, OVERRIDES_PATTERN, "eagle:0.8:0.1")
    # Each source brings its own c; the regime only prices verification (the roofline's c is not used here).
    chosen = _regime(regime, limits.DEFAULT_C, beta, batch)
    return sources_out(k_max, chosen, edits)


# ---------------------------------------------------------------------------
# Trees


@router.get(
    "/trees", summary="Chains against trees for a budget of drafted tokens", response_model=TreesOut, dependencies=HEAVY
)
@in_worker_process
@with_rules(TREES_RULES)
@takes(
    inputs.TREE_ACCEPTANCE,
    inputs.TREE_BUDGET,
    core_inputs.C,
    inputs.TREE_REGIME,
    core_inputs.BETA,
    core_inputs.COST_BATCH,
    inputs.TREE_WIDTHS,
)
def get_trees(acceptance: str, budget: int, c: float, regime: str, beta: float, batch: int, widths: str) -> TreesOut:
    """Chain, fixed-width, most-tokens and best-speedup trees for a budget; bounds; speedup with the tree in the cost.

    By default verification is priced by the roofline of the default setup at batch 1 (verification_assumption
    says what is assumed), so verifying a tree grows with its nodes; c is used by the other regimes.
    """
    return trees_report(acceptance, budget, c, regime, beta, batch, widths)


def trees_report(acceptance: str, budget: int, c: float, regime: str, beta: float, batch: int, widths: str) -> TreesOut:
    """GET /trees once its parameters are in range; also the page's first paint."""
    values = _numbers("acceptance", _text_parameter("acceptance", acceptance), MAX_TREE_WIDTH)
    if not values:
        raise parameter_error("acceptance", "needs at least one probability, e.g. 0.6,0.2,0.1", acceptance)
    try:
        probabilities = trees.positional_acceptance(values)
    except ValueError as error:
        raise parameter_error("acceptance", str(error), acceptance) from None
    _check_format("acceptance", acceptance, ACCEPTANCE_PATTERN, "0.6,0.2,0.1")
    width_values = _numbers("widths", _text_parameter("widths", widths, limits.MAX_WIDTHS_TEXT), MAX_TREE_WIDTHS)
    chosen_widths: list[int] = []
    for value in width_values:
        if not value.is_integer() or not 2 <= value <= MAX_TREE_WIDTH:
            raise parameter_error("widths", f"each width must be an integer from 2 to {MAX_TREE_WIDTH}; got {value:g}")
        if int(value) not in chosen_widths:
            chosen_widths.append(int(value))
    _check_format("widths", widths, WIDTHS_PATTERN, "2,4")
    chosen = _regime(regime, c, beta, batch)
    return trees_out(probabilities, budget, chosen, chosen_widths)
