"""Rollout per class: the rollout plan of a pasted scrape holding several classes, and the canary check over a
Prometheus."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from app.model.counters.calibration import MAX_EXPOSITION_BYTES, CalibrationError
from app.model.live import rollout
from app.service import plan_inputs, rollout_inputs
from app.service import rollout_plan as rollout_report
from app.service.clients import rollout as rollout_check
from app.service.clients.prometheus import Prometheus, PrometheusError
from app.service.regimes import BuiltSetup
from app.service.schemas.rollout import RolloutCheckOut, RolloutPlanOut
from app.web.api.bodies import body_error, body_text
from app.web.api.inputs import takes
from app.web.api.setup_params import RULES, SETUP_RULES, Setup
from app.web.core.config import app_settings
from app.web.core.errors import parameter_error, with_rules
from app.web.core.heavy import HEAVY

router = APIRouter(prefix="/api/v1", tags=["rollout"])

LABEL = plan_inputs.LABEL


def _label(label: str) -> str:
    try:
        return rollout.class_label("label", label)
    except rollout.RolloutInputError as error:
        raise parameter_error("label", error.message) from None


SCRAPE_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": (
            "One /metrics scrape (Prometheus text format) of an engine's replicas holding several classes, at most "
            f"{MAX_EXPOSITION_BYTES:,} bytes: the spec-decode counters since each server started, and the "
            "running-requests gauge as scraped."
        ),
        "content": {"text/plain": {"schema": {"type": "string", "minLength": 1, "maxLength": MAX_EXPOSITION_BYTES}}},
    }
}


@router.post(
    "/rollout/plan",
    summary="Per class: acceptance, batches, schedule, gain and a verdict, in rollout order",
    response_model=RolloutPlanOut,
    dependencies=HEAVY,
    openapi_extra=SCRAPE_BODY,
    responses={422: {"description": "An empty, oversized or unreadable scrape, or one without spec-decode counters."}},
)
@with_rules(
    RULES + "- `metrics`: the body holds one /metrics scrape, in Prometheus text, with the spec-decode counters of an "
    "engine that counts drafts (vLLM, TensorRT-LLM, llama.cpp) or verifications (SGLang, with the gauge of the k "
    "running), of one or more classes;\n" + SETUP_RULES
)
@takes(LABEL, plan_inputs.K_MAX)
async def post_rollout_plan(request: Request, built: Setup, label: str, k_max: int) -> RolloutPlanOut | JSONResponse:
    """The rollout plan of a pasted scrape: per class (``label``) the measured acceptance with its interval, the
    batches it ran, the schedule and config for it on this setup, the gain weighted over those batches with the
    cost model's stated error, and a verdict (turn on, leave off, measure first); the surest gains first."""
    text = await body_text(request, MAX_EXPOSITION_BYTES, "metrics")
    if isinstance(text, JSONResponse):
        return text
    if not text.strip():
        return body_error("metrics", "is required: the /metrics text", "missing")
    return await run_in_threadpool(_planned, text, built, _label(label), k_max)


def _planned(text: str, built: BuiltSetup, label: str, k_max: int) -> RolloutPlanOut | JSONResponse:
    try:
        engine, version, classes = rollout_report.from_scrape(text, label)
        return rollout_report.plan_classes(engine, version, classes, built, label, k_max)
    except CalibrationError as error:
        return body_error("metrics", error.message, error.kind.value)


CHECK_RULES = RULES + (
    "- `prometheus`: an http(s) URL, read only where the server allows it (SPECDEC_ALLOW_FETCH); a Prometheus "
    "that does not answer, or holds no decode-time series, gets a 422 naming it;\n"
    '- `canary`, `control`: label matchers (name="value", =~, !=, !~), not the same, each selecting series '
    "and none in common;\n"
    "- `window` holds at least three `interval`s and at most 1,000; `interval` is from 1 s to 1 h;\n"
    "- `calibrated`: LOW,HIGH with 0 <= LOW <= HIGH <= 1."
)


@router.post(
    "/rollout/check",
    summary="The canary check over a Prometheus: per class promote, roll back or hold",
    response_model=RolloutCheckOut,
    dependencies=HEAVY,
    responses={422: {"description": "Refused input, a server that does not fetch, or a Prometheus that fails."}},
)
@with_rules(CHECK_RULES)
@takes(*rollout_inputs.CHECK, LABEL)
async def post_rollout_check(
    request: Request,
    prometheus: str,
    canary: str,
    control: str,
    label: str,
    window: str,
    interval: str,
    calibrated: str | None,
) -> RolloutCheckOut:
    """Per class, the canary's speedup over control from the engine's own decode-time series (a 95% interval
    over intervals), its acceptance against its calibrated interval, and the verdict with ``exit_code`` as the
    command line's (0 promote, 1 roll back, 3 hold).  Prometheus is read only where the server allows it."""
    if not app_settings(request).allow_fetch:
        raise parameter_error(
            "prometheus", "this server does not fetch URLs (SPECDEC_ALLOW_FETCH is off): run specdec-lab rollout check"
        )
    try:
        checked = rollout_check.check_request(canary, control, label, window, interval, calibrated)
    except rollout.RolloutInputError as error:
        raise parameter_error(error.option.lstrip("-"), error.message) from None
    return await run_in_threadpool(_checked, prometheus, checked)


def _checked(url: str, checked: rollout_check.CheckRequest) -> RolloutCheckOut:
    try:
        return rollout_check.check(Prometheus(url), checked)
    except rollout.RolloutInputError as error:
        raise parameter_error(error.option.lstrip("-"), error.message) from None
    except PrometheusError as error:
        raise parameter_error("prometheus", str(error)) from None
