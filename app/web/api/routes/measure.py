"""Measure live servers as a job: start a batch sweep, read its progress and partial table, cancel it.

The sweep is `specdec-lab measure --batch`'s (:mod:`app.service.measure_jobs`); it reaches the servers the caller
names, so it runs only where the deployment allows it (SPECDEC_ALLOW_MEASURE), one at a time per worker.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from app.model.limits import InputError
from app.service import live_inputs
from app.service.measure_jobs import Job, JobError, JobRequest, Jobs
from app.service.schemas.measure import MeasureJob
from app.web.api.bodies import body_error, body_text
from app.web.api.inputs import dependency
from app.web.core.config import app_settings

router = APIRouter(prefix="/api/v1", tags=["measure"])

# The job's inputs as query parameters, their values by name.
MeasureQuery = Annotated[dict[str, Any], Depends(dependency(live_inputs.MEASURE_JOB, dict))]


def jobs(request: Request) -> Jobs:
    """The worker's jobs (made on first use)."""
    found = getattr(request.app.state, "measure_jobs", None)
    if not isinstance(found, Jobs):
        found = Jobs()
        request.app.state.measure_jobs = found
    return found


def _job(request: Request, job_id: str) -> Job:
    try:
        return jobs(request).get(job_id)
    except JobError as error:
        raise HTTPException(status_code=404, detail=error.message) from None


def start(request: Request, values: dict[str, Any]) -> Job:
    """A job started from the inputs' values; 403 where measuring is not allowed, 422 naming the input."""
    if not app_settings(request).allow_measure:
        raise HTTPException(
            status_code=403,
            detail="this server does not drive inference servers (SPECDEC_ALLOW_MEASURE is off); run "
            "`specdec-lab measure URL ... --batch 1,2,4,8` where the servers are",
        )
    prompts = live_inputs.prompt_list(str(values.get("prompts") or ""))  # the body's: its own 422
    job_request = JobRequest(
        servers=live_inputs.server_list(str(values["servers"])),
        batches=live_inputs.batch_list(str(values["batches"])),
        n_predict=int(values["n_predict"]),
        repeats=int(values["repeats"]),
        max_requests=int(values["max_requests"]),
        timeout=float(values["timeout"]),
        engine=values.get("engine") or None,
        method=live_inputs.drafter_for(values.get("engine") or None, values.get("method")),
        **({"prompts": prompts} if prompts else {}),
    )
    return jobs(request).start(job_request)  # a JobError is an InputError: a 422 naming the input


@router.post(
    "/measure",
    summary="Start measuring live servers over batch sizes (a job)",
    status_code=202,
    response_model=MeasureJob,
    responses={
        403: {"description": "This deployment does not drive inference servers (SPECDEC_ALLOW_MEASURE)."},
        422: {"description": "An input out of bounds, or a server that is not an engine measure drives."},
    },
    openapi_extra={
        "requestBody": {
            "required": False,
            "description": live_inputs.PROMPTS.help,
            "content": {"text/plain": {"schema": {"type": "string", "maxLength": live_inputs.MAX_JOB_PROMPT_BYTES}}},
        }
    },
)
async def start_measure(request: Request, values: MeasureQuery) -> MeasureJob | JSONResponse:
    """The sweep of `specdec-lab measure --batch` as a job: each server is asked at once whether it is an engine
    this product drives (llama-server or vLLM) and whether it speculates; then B requests at once on each server
    per batch size, rounds interleaved.  Read its progress with GET /api/v1/measure/{id}; cancel it with POST
    /api/v1/measure/{id}/cancel.  Only where the deployment allows it (SPECDEC_ALLOW_MEASURE), one at a time.
    The body, where given, is the workload: one prompt per line (text/plain); empty, four built-in prompts."""
    prompts = await body_text(request, live_inputs.MAX_JOB_PROMPT_BYTES, "prompts")
    if isinstance(prompts, JSONResponse):
        return prompts
    values["prompts"] = prompts
    try:
        job = await run_in_threadpool(start, request, values)  # asks each server at once: blocking calls
    except InputError as error:
        if error.name != live_inputs.PROMPTS.name:
            raise  # a query parameter's: the app's 422 naming it in the query
        return body_error(error.name, error.message, "value")  # the body's prompts
    return job.view()


@router.get(
    "/measure/{job_id}",
    summary="A measurement's state, progress and cells so far",
    response_model=MeasureJob,
    responses={404: {"description": "No such measurement on this worker."}},
)
def read_measure(request: Request, job_id: str) -> MeasureJob:
    """The job: running, done, incomplete, failed or cancelled; the requests done of those planned; every cell
    measured so far; once finished, the full report."""
    return _job(request, job_id).view()


@router.post(
    "/measure/{job_id}/cancel",
    summary="Cancel a measurement (the cells measured are kept)",
    response_model=MeasureJob,
    responses={404: {"description": "No such measurement on this worker."}},
)
def cancel_measure(request: Request, job_id: str) -> MeasureJob:
    """Stops the sweep before its next cell; what it measured stays in the job and its report."""
    _job(request, job_id)
    return jobs(request).cancel(job_id).view()
