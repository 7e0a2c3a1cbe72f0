"""The engine loop: any engine's report in, p with its interval out; the decision as each engine's config."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from app.model.calibration import MAX_EXPOSITION_BYTES, CalibrationError
from app.model.engines.base import UnknownVersionError
from app.service import decision_inputs as inputs
from app.service import plan_inputs
from app.service import step_fit as step_fit_service
from app.service.decision import CostRegime
from app.service.engines import calibrate_report
from app.service.fetch import FetchError, fetch_text
from app.service.schemas.engines import EngineCalibrationOut, EngineConfigOut, StepFitOut
from app.web.api.inputs import takes
from app.web.api.params import K_MAX_LIMIT, Cost
from app.web.api.plan_params import (
    PLAN_RULES,
    PlanQuery,
    built_plan,
    checked_engine_version,
)
from app.web.api.setup_params import RULES, SETUP_RULES, Setup
from app.web.core.config import Settings, get_settings
from app.web.core.errors import parameter_error, with_rules
from app.web.core.heavy import HEAVY

router = APIRouter(prefix="/api/v1", tags=["engines"])


def _draft_lengths(text: str) -> tuple[int, ...]:
    lengths = tuple(int(item) for item in text.split(",") if item.strip())
    if any(not 1 <= length <= K_MAX_LIMIT for length in lengths):
        raise parameter_error("draft_lengths", f"each must be 1 to {K_MAX_LIMIT}; got {text!r}", text)
    return lengths


def _unprocessable(field: str, message: str, kind: str) -> JSONResponse:
    return JSONResponse(
        status_code=422,
        content={
            "detail": [{"loc": ["body", field], "msg": f"{field}: {message}", "type": "value_error", "kind": kind}]
        },
    )


def _settings(request: Request) -> Settings:
    settings = getattr(request.app.state, "settings", None)
    return settings if isinstance(settings, Settings) else get_settings()


async def _body_text(request: Request, limit: int) -> str | JSONResponse:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return _unprocessable("body", f"must be at most {limit:,} bytes", "too_large")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return _unprocessable("body", f"must be at most {limit:,} bytes", "too_large")
        chunks.append(chunk)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        return _unprocessable("body", "must be UTF-8 text", "encoding")


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
CONFIG_RULES = RULES + PLAN_RULES + SETUP_RULES
STEP_FIT_RULES = (
    RULES
    + "- `body`: step times in one of the formats named (CSV, vLLM or SGLang JSON, TensorRT-LLM statistics);\n"
    + SETUP_RULES
)


@router.post(
    "/calibrate",
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
    checked_engine_version(engine_version)  # its declared bounds; the report's engine checks the rest
    body = await _body_text(request, MAX_EXPOSITION_BYTES)
    if isinstance(body, JSONResponse):
        return body
    if url is not None:
        if not _settings(request).allow_fetch:
            raise parameter_error(
                "url", "this server does not fetch URLs (SPECDEC_ALLOW_FETCH is off): paste the report as the body"
            )
        if body.strip():
            raise parameter_error("url", "give either a body or url=, not both")
        try:
            body = await run_in_threadpool(fetch_text, url)
        except FetchError as error:
            raise parameter_error("url", str(error)) from None
    lengths = _draft_lengths(draft_lengths)
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
        return _unprocessable("body", error.message, error.kind.value)
    except UnknownVersionError as error:
        return _unprocessable(
            "engine_version",
            f"{error.engine} has no version {error.version!r}; known: {', '.join(error.known)}",
            "unknown_version",
        )


@router.get("/engine-config", response_model=EngineConfigOut)
@with_rules(CONFIG_RULES)
def get_engine_config(built: Setup, request: PlanQuery) -> EngineConfigOut:
    """The best k per batch on this setup, only at batches that fit, written in the engine's own config keys."""
    return built_plan(request, built).config_out()


@router.post(
    "/step-fit",
    response_model=StepFitOut,
    dependencies=HEAVY,
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": (
                "Measured step times: CSV with columns batch, tokens (per sequence), ms; or the JSON vLLM's dynamic "
                "speculation config generator writes (batch_stats); SGLang bench_speculative JSON Lines; or "
                "TensorRT-LLM iteration statistics (decode-only iterations)."
            ),
            "content": {"text/plain": {"schema": {"type": "string", "maxLength": step_fit_service.MAX_BYTES}}},
        }
    },
)
@with_rules(STEP_FIT_RULES)
@takes(*inputs.STEP_FIT)
async def post_step_fit(
    request: Request, built: Setup, p: float | None, k_max: int, batch_max: int
) -> StepFitOut | JSONResponse:
    """Fit bandwidth and compute efficiency and the per-step overhead to measured step times; report the error."""
    body = await _body_text(request, step_fit_service.MAX_BYTES)
    if isinstance(body, JSONResponse):
        return body
    try:
        return await run_in_threadpool(step_fit_service.step_fit_out, body, built, p, k_max, batch_max)
    except step_fit_service.StepFitError as error:
        return _unprocessable("body", str(error), "step_times")
