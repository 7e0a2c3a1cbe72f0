"""The decision as each engine's config (GET /engine-config), and a setup fitted to an engine's step times
(POST /step-fit); any engine's report in, p out, is POST /calibrate in routes/calibrate.py."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from app.service import decision_inputs as inputs
from app.service import step_fit as step_fit_service
from app.service.schemas.engines import EngineConfigOut, StepFitOut
from app.web.api.bodies import body_error, body_text
from app.web.api.inputs import takes
from app.web.api.plan_params import (
    PLAN_RULES,
    PlanQuery,
    built_plan,
)
from app.web.api.setup_params import RULES, SETUP_RULES, Setup
from app.web.core.errors import with_rules
from app.web.core.heavy import HEAVY

router = APIRouter(prefix="/api/v1", tags=["engines"])

CONFIG_RULES = RULES + PLAN_RULES + SETUP_RULES
STEP_FIT_RULES = (
    RULES
    + "- `body`: step times in one of the formats named (CSV, vLLM or SGLang JSON, TensorRT-LLM statistics);\n"
    + SETUP_RULES
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
    body = await body_text(request, step_fit_service.MAX_BYTES)
    if isinstance(body, JSONResponse):
        return body
    try:
        return await run_in_threadpool(step_fit_service.step_fit_out, body, built, p, k_max, batch_max)
    except step_fit_service.StepFitError as error:
        return body_error("body", str(error), "step_times")
