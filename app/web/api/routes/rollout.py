"""Rollout per class: the rollout plan of a pasted scrape holding several classes."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from app.model import limits, rules
from app.model.calibration import MAX_EXPOSITION_BYTES, CalibrationError
from app.service import plan_inputs
from app.service import rollout_plan as rollout_report
from app.service.regimes import BuiltSetup
from app.web.api.bodies import read_capped
from app.web.api.inputs import query
from app.web.api.setup_params import RULES, SETUP_RULES, Setup
from app.web.core.errors import with_rules
from app.web.core.heavy import HEAVY

router = APIRouter(prefix="/api/v1", tags=["rollout"])

Label = Annotated[str, query(plan_inputs.INPUTS["label"])]
KMaxPlan = Annotated[int, query(plan_inputs.K_MAX)]

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


def _unprocessable(message: str, kind: str) -> JSONResponse:
    return JSONResponse(
        status_code=422,
        content={
            "detail": [{"loc": ["body", "metrics"], "msg": f"metrics: {message}", "type": "value_error", "kind": kind}]
        },
    )


@router.post(
    "/rollout/plan",
    summary="Per class: acceptance, batches, schedule, gain and a verdict, in rollout order",
    dependencies=HEAVY,
    openapi_extra=SCRAPE_BODY,
    responses={422: {"description": "An empty, oversized or unreadable scrape, or one without spec-decode counters."}},
)
@with_rules(
    RULES + "- `metrics`: the body holds one /metrics scrape, in Prometheus text, with the spec-decode counters of an "
    "engine that counts drafts (vLLM, TensorRT-LLM, llama.cpp), of one or more classes;\n" + SETUP_RULES
)
async def post_rollout_plan(
    request: Request,
    built: Setup,
    label: Label = rules.DEFAULT_LABEL,
    k_max: KMaxPlan = limits.ROOFLINE_DEFAULT_K_MAX,
) -> Any:
    """The rollout plan of a pasted scrape: per class (``label``) the measured acceptance with its interval, the
    batches it ran, the schedule and config for it on this setup, the gain weighted over those batches with the
    cost model's stated error, and a verdict (turn on, leave off, measure first); the surest gains first."""
    body = await read_capped(request, MAX_EXPOSITION_BYTES)
    if body is None:
        return _unprocessable(f"the body must be at most {MAX_EXPOSITION_BYTES:,} bytes", "too_large")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return _unprocessable("must be UTF-8 text", "encoding")
    if not text.strip():
        return _unprocessable("is required: the /metrics text", "missing")
    return await run_in_threadpool(_planned, text, built, label, k_max)


def _planned(text: str, built: BuiltSetup, label: str, k_max: int) -> Any:
    try:
        engine, version, classes = rollout_report.from_scrape(text, label)
        return rollout_report.plan_classes(engine, version, classes, built, label, k_max)
    except CalibrationError as error:
        return _unprocessable(error.message, error.kind.value)
