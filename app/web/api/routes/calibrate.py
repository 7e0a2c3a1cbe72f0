"""Every /calibrate route: p from a rate, a length, counters, a pasted vLLM scrape or any engine's report."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.concurrency import run_in_threadpool

from app.model.counters import calibration
from app.model.counters.calibration import CalibrationError, ErrorKind
from app.model.counters.counts import Measurement
from app.model.engines.base import UnknownVersionError
from app.service import decision_inputs as inputs
from app.service import plan_inputs
from app.service.decision import CostRegime, calibration_out
from app.service.engines import BaselineError, calibrate_report, calibrate_scrape
from app.service.fetch import FetchError, fetch_text
from app.service.inputs import number_list
from app.service.schemas.decision import CalibrationOut
from app.service.schemas.engines import EngineCalibrationOut
from app.web.api.bodies import body_error, body_text, read_capped
from app.web.api.inputs import takes
from app.web.api.params import Cost
from app.web.api.setup_params import RULES
from app.web.api.text_params import check_format, text_parameter
from app.web.core.config import app_settings
from app.web.core.errors import parameter_error, with_rules
from app.web.core.heavy import HEAVY, in_worker_process

router = APIRouter(prefix="/api/v1")
# each route keeps the tag it had before the routes were split by concept
DECISION = "decision"
ENGINES = "engines"
Handler = TypeVar("Handler", bound=Callable[..., Any])

# Caps on the work and size of one request.
MAX_EXPOSITION_BYTES = calibration.MAX_EXPOSITION_BYTES  # per pasted exposition (metrics, baseline)
# metrics + baseline, each up to twice its length once JSON escapes quotes and newlines, + framing
MAX_BODY_BYTES = 4 * MAX_EXPOSITION_BYTES + 65_536
MAX_COUNT = inputs.MAX_COUNT
MAX_POSITIONS = calibration.MAX_POSITIONS

# Rules that tie parameters (or the values of one list) together: enforced by the handlers, listed in each
# operation's description because a schema cannot say them.
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

CALIBRATE_BODY: dict[str, Any] = {
    "requestBody": {
        "required": False,
        "description": (
            "The report as the engine wrote it, at most 1,000,000 bytes: vLLM or SGLang /metrics text, SGLang "
            "/server_info JSON, TensorRT-LLM iteration stats JSON (a list, or JSON Lines), or llama.cpp's printed "
            "summary. The format is detected. Empty when url= is given. To subtract an earlier vLLM scrape "
            '(warm-up), send JSON {"report": "...", "baseline": "..."}.'
        ),
        "content": {
            "text/plain": {"schema": {"type": "string", "maxLength": MAX_EXPOSITION_BYTES}},
            "application/json": {"schema": {}},
        },
    }
}


CALIBRATE_RULES = RULES + (
    "- `body`: a report of one of the engines' formats (at most the size stated), with spec-decode series that "
    "agree with each other (and with k when it is given);\n"
    "- `url`: instead of a body, never both, and only when the server allows fetching;\n"
    "- `engine_version` is one that the engine whose format the body is in knows;\n"
    "- `draft_lengths`: each from 1 to the largest k."
)

# ---------------------------------------------------------------------------
# From a rate, a length, counters or a pasted vLLM scrape


def calibration_route(path: str, summary: str) -> Callable[[Handler], Handler]:
    """A GET that answers a calibration (heavy: in the worker processes)."""

    def register(handler: Handler) -> Handler:
        route = router.get(path, summary=summary, response_model=CalibrationOut, dependencies=HEAVY, tags=[DECISION])
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
    """The query parameter a refused count is about: the error names its count (accepted where it names none)."""
    return error.field or "accepted"


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
    positions = list(number_list("per_position", text_parameter("per_position", per_position), MAX_POSITIONS))
    if any(value < 0 or value > MAX_COUNT for value in positions):
        raise parameter_error("per_position", f"values must be from 0 to {MAX_COUNT:.0e}", per_position)
    check_format("per_position", per_position, inputs.PER_POSITION_PATTERN, "900,700,400")
    counters = Measurement("vllm", "counters", None, drafts, draft_tokens, accepted, tuple(positions))
    chosen = cost.priced()
    try:
        result = calibration.calibrate_from_counters(counters, chosen.c, k_max, chosen.verify, k)
    except CalibrationError as error:
        raise parameter_error(_counter_parameter(error), error.message) from None
    return calibration_out(result, chosen, source="counters")


async def _read_capped(request: Request) -> bytes | None:
    """The request body, or None as soon as it exceeds MAX_BODY_BYTES (never read in full)."""
    return await read_capped(request, MAX_BODY_BYTES)


def _texts_from_body(body: bytes, content_type: str) -> tuple[str, str | None] | JSONResponse:
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError:
        return body_error("metrics", "must be UTF-8 text", "encoding")
    if "json" not in content_type:
        return decoded, None
    try:
        payload: Any = json.loads(decoded)
    except json.JSONDecodeError as error:
        return body_error("metrics", f"the JSON body does not parse ({error.msg}, line {error.lineno})", "json")
    if not isinstance(payload, dict):
        return body_error("metrics", 'the JSON body must be an object {"metrics": "...", "baseline": "..."}', "json")
    extra = sorted(set(payload) - {"metrics", "baseline"})
    if extra:
        return body_error("metrics", f"unknown JSON fields {', '.join(extra)}; use metrics and baseline", "json")
    metrics, baseline = payload.get("metrics"), payload.get("baseline")
    if not isinstance(metrics, str):
        return body_error("metrics", "is required: the /metrics text as a JSON string", "missing")
    if baseline is not None and not isinstance(baseline, str):
        return body_error("baseline", "must be the earlier /metrics text as a JSON string, or null", "type")
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
    tags=[DECISION],
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
        return body_error(
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
        return body_error("baseline", error.message, error.kind.value)
    except CalibrationError as error:
        if error.field == "k":  # the k given, which the counts contradict
            raise parameter_error("k", error.message, k) from None
        return body_error("metrics", error.message, error.kind.value)
    return calibration_out(result, chosen)


@router.get(
    "/calibrate/example-metrics",
    tags=[DECISION],
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
# From any engine's report, its format detected


@router.post(
    "/calibrate",
    tags=[ENGINES],
    response_model=EngineCalibrationOut,
    dependencies=HEAVY,
    openapi_extra=CALIBRATE_BODY,
    responses={422: {"description": "Unknown format, no spec-decode series, counters that go down or disagree."}},
)
@with_rules(CALIBRATE_RULES)
@takes(
    plan_inputs.K,
    inputs.CLASS_LABEL,
    inputs.CYCLES,
    inputs.URL,
    inputs.K_MAX,
    inputs.DRAFT_LENGTHS,
    plan_inputs.ENGINE_VERSION,
)
async def calibrate_any(
    request: Request,
    cost: Cost,
    k: int | None,
    label: str,
    cycles: float | None,
    url: str | None,
    k_max: int,
    draft_lengths: str,
    engine_version: str | None,
) -> EngineCalibrationOut | JSONResponse:
    """Detect the engine's format; infer p with its interval, k, the per-position fit and the i.i.d. test per class."""
    chosen = cost.priced()
    plan_inputs.ENGINE_VERSION.check(engine_version)  # its declared bounds; the report's engine checks the rest
    body = await body_text(request, MAX_EXPOSITION_BYTES)
    if isinstance(body, JSONResponse):
        return body
    if url is not None:
        if not app_settings(request).allow_fetch:
            raise parameter_error(
                "url", "this server does not fetch URLs (SPECDEC_ALLOW_FETCH is off): paste the report as the body"
            )
        if body.strip():
            raise parameter_error("url", "give either a body or url=, not both")
        try:
            body = await run_in_threadpool(fetch_text, url)
        except FetchError as error:
            raise parameter_error("url", str(error)) from None
    lengths = inputs.draft_lengths(draft_lengths)
    return await run_in_threadpool(_calibrate, body, chosen, k_max, k, label, cycles, lengths, engine_version)


def _calibrate(
    text: str,
    chosen: CostRegime,
    k_max: int,
    k: int | None,
    label: str,
    cycles: float | None,
    draft_lengths: tuple[int, ...],
    engine_version: str | None,
) -> EngineCalibrationOut | JSONResponse:
    try:
        return calibrate_report(
            text,
            chosen,
            k_max,
            k=k,
            label=label,
            cycles=cycles,
            draft_lengths=draft_lengths,
            engine_version=engine_version,
        ).out
    except CalibrationError as error:
        if error.field == "k":  # the k given, which the report contradicts
            raise parameter_error("k", error.message, k) from None
        return body_error("body", error.message, error.kind.value)
    except UnknownVersionError as error:
        return body_error(
            "engine_version",
            f"{error.engine} has no version {error.version!r}; known: {', '.join(error.known)}",
            "unknown_version",
        )
