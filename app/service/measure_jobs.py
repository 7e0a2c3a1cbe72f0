"""A batch sweep of live servers as a job: started, watched (state, cells done, the partial table) and cancelled.

The command line runs :class:`~app.service.clients.measure.Sweep` over batches in the foreground with a progress
line; the API and the /decide page run the same sweep here, in a thread of the worker, and read its progress
while it runs.  :func:`batch_report` turns what a sweep measured into the report both print, so that the job's
report and ``measure --batch --format json`` are one shape.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from app.model import engines
from app.model.cost import step_cost
from app.model.limits import InputError
from app.model.live import engine_config
from app.model.live.measure import MeasureError
from app.model.live.measure_batches import BatchAnalysis, analyze_batches, measured_schedule
from app.service.clients.measure import BUILTIN_PROMPTS, MeasureClientError, Record, Run, Server, Sweep
from app.service.schemas.fill import filled
from app.service.schemas.measure import (
    BatchReport,
    BatchStepCostOut,
    BestKAtBatch,
    CrossoverOut,
    JobCell,
    JobServer,
    MeasuredConfig,
    MeasureJob,
)

MAX_JOBS_KEPT = 16  # finished jobs kept for reading, the oldest dropped first
MAX_RUNNING = 1  # sweeps at once per worker: two would share, and so disturb, what each measures


class JobError(InputError):
    """A job that cannot start (``name`` is the input it is about) or is not known (``name`` is ``job``)."""


def analysis_report(analysis: BatchAnalysis) -> dict[str, Any]:
    """The fields of a :class:`BatchReport` that the analysis gives."""
    cost = analysis.step_cost
    return {
        "ks": analysis.ks,
        "draft_model": analysis.draft_model,
        "cells": list(analysis.cells),
        "crossover": [
            CrossoverOut(
                k=item.k,
                crossover_batch_measured=item.measured,
                crossover_batch_predicted=item.predicted,
                fitted_on_batches=list(item.fitted_on),
                predicted_in_measured_interval=item.in_measured_interval,
                note=item.note,
            )
            for item in analysis.crossovers
        ],
        "best_k_by_batch": [
            BestKAtBatch(
                batch=batch,
                measured=analysis.best_k_measured.get(batch),
                predicted=analysis.best_k_predicted.get(batch),
            )
            for batch in analysis.batches
        ],
        "step_cost": filled(BatchStepCostOut, cost, model=step_cost.MODEL, fitted=list(cost.fitted)),
        "holdout_errors": list(analysis.holdout_errors),
    }


NAME_IT = "name the drafter: Drafter on /decide, method in the API, --method on the command line"


def _version_of(engine: str, reported: str | None) -> tuple[str | None, list[str]]:
    """The product's name for the version a server reported (its release, or that release's major.minor), or
    None (the newest) with a note where the product does not know it."""
    if not reported:
        return None, [f"the server did not report its version: written for {engines.version(engine).name}, the newest"]
    try:
        return engines.version(engine, reported).name, []
    except engines.UnknownVersionError:
        pass
    newest = engines.version(engine).name
    return None, [f"version {reported} is not one the product knows for this engine: written for {newest}, the newest"]


def measured_config(
    servers: Sequence[Server], analysis: BatchAnalysis, method: str | None = None
) -> MeasuredConfig | None:
    """The engine's config for the schedule the sweep measured (best k per batch, see
    :func:`~app.model.live.measure_batches.measured_schedule`), written for the measured server's engine and
    version and read back the way that engine reads it.  ``method``: the drafter as the engine spells it; where
    none is given, llama-server's own (from /slots), else the writer's default.  None without a speculative
    server; a refusal of the engine (a drafter it does not take) is the entry's ``error``."""
    speculative = [server for server in servers if server.speculative]
    best_k, steps = measured_schedule(analysis)
    if not speculative or not best_k:
        return None
    server = speculative[0]
    engine = server.engine
    drafter = method
    version, said = _version_of(engine, server.version)
    if drafter is None and engine == "llamacpp":
        kinds = [kind for kind in server.kind.split(",") if kind and kind != "speculative"]
        drafter = kinds[0] if kinds else None
        if len(kinds) > 1:
            said.append(f"the server drafts with {', '.join(kinds)}: written for {kinds[0]} ({NAME_IT} for another)")
    if drafter is None:
        said.append(f"the server does not name its drafter: written with the engine's default ({NAME_IT})")
    # an engine that runs one k at every batch is written for the largest batch where speculation paid (llama.cpp's
    # --parallel then keeps the server there), or the largest measured where it never did
    paying = [batch for batch, k in enumerate(best_k, start=1) if k > 0]
    top = paying[-1] if paying else len(best_k)
    entry: dict[str, Any] = {
        "engine": engine,
        "title": engines.adapter(engine).TITLE,
        "version": version or engines.version(engine).name,
        "method": drafter,
        "steps": list(steps),
        "batch": top,
    }
    try:
        written = engine_config.export(
            engine,
            best_k,
            steps,
            len(best_k),
            batch=top,
            method=drafter,
            version=version,
            limit_reason="the largest batch measured",
        )
    except ValueError as error:  # a drafter or a version the engine does not take
        return MeasuredConfig(**entry, error=str(error), notes=said)
    exported = written.exported
    off = (
        [
            f"speculation paid at none of the batches measured ({', '.join(map(str, analysis.batches))}): run "
            f"{entry['title']} without it; there is no speculation config to write"
        ]
        if not paying
        else []
    )
    return filled(
        MeasuredConfig,
        exported,
        **entry,
        error=None,
        notes=[
            *off,
            f"the schedule measured at batches {', '.join(map(str, analysis.batches))}: a batch between two takes "
            "the best k of the next measured batch up",
            "the drafter's settings other than k (an n-gram's match length, a draft model's path) are not in what "
            "a server reports: add those the measured server ran with",
            *said,
            *exported.notes,
        ],
    )


def batch_report(
    run: Run,
    batches: Sequence[int],
    workload: dict[str, int],
    given: dict[str, float] | None = None,
    notes: Sequence[str] = (),
    method: str | None = None,
) -> tuple[BatchReport, BatchAnalysis | None, str | None]:
    """The report of a batch sweep (what ``measure --batch --format json`` writes), its analysis where the
    cells allow one, and why it is incomplete (None when every cell was measured and analysed)."""
    said = [*notes, *run.notes]
    kinds = {server.kind for server in run.servers if server.speculative}
    draft_model = not (kinds and all(kind.startswith("ngram") for kind in kinds))
    for title in sorted(
        {s.live_format.title for s in run.servers if s.speculative and not s.live_format.drafter_named}
    ):
        said.append(
            f"{title}'s metrics do not name the drafter: each draft step is fitted as a draft model's, which an "
            "n-gram lookup's near-zero draft time leaves at zero"
        )
    samples = [sample for round_ in run.rounds for sample in round_]
    fields: dict[str, Any] = {
        "servers": [filled(JobServer, server) for server in run.servers],
        "batches": list(batches),
        "workload": dict(workload),
        "requests": run.requests,
        "seconds": run.seconds,
        "stopped": run.stopped,
        "samples": samples,
    }
    failure = run.stopped
    analysis = None
    try:
        analysis = analyze_batches(run.rounds, draft_model, given)
    except MeasureError as error:
        failure = f"{failure}; {error}" if failure else str(error)
    if analysis is not None:
        fields.update(analysis_report(analysis))
        fields["engine_config"] = measured_config(run.servers, analysis, method)
        said += analysis.notes
    return BatchReport(**fields, notes=said), analysis, failure


def partial_cells(servers: Sequence[Server], records: Sequence[Record]) -> list[JobCell]:
    """The cells measured so far, one row per (server, batch, round): what a progress view shows."""
    return [
        JobCell(
            url=servers[record.server].url,
            k=servers[record.server].k,
            batch=record.batch,
            round=record.repeat + 1,
            generated=record.generated,
            ms_per_token=record.decode_ms / record.generated if record.generated else None,
            tokens_per_s=record.generated / record.wall_ms * 1e3 if record.wall_ms else None,
            drafts=record.delta.drafts,
            accepted=record.delta.accepted,
        )
        for record in records
    ]


@dataclass(frozen=True)
class JobRequest:
    """What a job measures: the servers (one per k, k = 0 the baseline), the batches and the workload."""

    servers: tuple[str, ...]
    batches: tuple[int, ...]
    n_predict: int
    repeats: int
    max_requests: int
    timeout: float
    engine: str | None = None  # named, not detected
    method: str | None = None  # the drafter, as the engine names it, for the measured schedule's config
    prompts: tuple[str, ...] = BUILTIN_PROMPTS  # the workload, shared out over each batch's requests


@dataclass
class Job:
    id: str
    request: JobRequest
    created: float = field(default_factory=time.time)
    state: str = "running"
    done: int = 0  # requests measured
    planned: int = 0
    label: str = "setting up"
    servers: list[Server] = field(default_factory=list)
    report: BatchReport | None = None
    error: str | None = None
    finished: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    sweep: Sweep | None = None

    def show(self, done: int, planned: int, label: str) -> None:
        """The sweep's progress: requests measured of those planned, and what it is doing."""
        self.done, self.planned, self.label = done, planned, label

    def view(self) -> MeasureJob:
        """The job as the API and the page show it: its state, progress and the cells so far."""
        sweep = self.sweep
        servers = sweep.servers if sweep is not None and sweep.servers else self.servers
        records = list(sweep.records) if sweep is not None else []
        return filled(
            MeasureJob,
            self,
            servers=[filled(JobServer, server) for server in servers],
            batches=list(self.request.batches),
            fraction=(self.done / self.planned) if self.planned else (1.0 if self.state != "running" else 0.0),
            seconds=(self.finished or time.time()) - self.created,
            cells=partial_cells(servers, records),
        )


SweepFactory = Callable[[httpx.Client, JobRequest, Callable[[int, int, str], None], threading.Event], Sweep]


def _sweep(
    client: httpx.Client, request: JobRequest, progress: Callable[[int, int, str], None], cancel: threading.Event
) -> Sweep:
    return Sweep(
        client,
        request.servers,
        list(request.prompts),
        batches=request.batches,
        n_predict=request.n_predict,
        repeats=request.repeats,
        max_requests=request.max_requests,
        timeout=request.timeout,
        progress=progress,
        cancel=cancel,
        engine=request.engine,
    )


class Jobs:
    """The jobs of one worker: at most MAX_RUNNING at once, the last MAX_JOBS_KEPT kept for reading."""

    def __init__(self, factory: SweepFactory = _sweep) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._factory = factory
        self._count = itertools.count(1)

    def start(self, request: JobRequest) -> Job:
        """Check the servers answer as engines (quickly, before anything is queued), then run the sweep in a
        thread; JobError (field ``servers``) when one does not, or when a sweep is already running."""
        with self._lock:
            if sum(job.state == "running" for job in self._jobs.values()) >= MAX_RUNNING:
                raise JobError("servers", "a measurement is already running on this server: wait for it or cancel it")
        client = httpx.Client()
        job = Job(f"{next(self._count)}-{uuid.uuid4().hex[:12]}", request)
        sweep = self._factory(client, request, job.show, job.cancel)
        try:
            job.servers = sweep.probe(timeout=3.0)
        except (MeasureClientError, httpx.HTTPError) as error:
            client.close()
            raise JobError("servers", str(error)) from None
        job.sweep = sweep
        with self._lock:
            self._jobs[job.id] = job
            finished = [key for key, kept in self._jobs.items() if kept.state != "running"]
            for key in finished[: max(0, len(self._jobs) - MAX_JOBS_KEPT)]:
                del self._jobs[key]
        threading.Thread(target=self._run, args=(job, sweep, client), daemon=True, name=f"measure {job.id}").start()
        return job

    def _run(self, job: Job, sweep: Sweep, client: httpx.Client) -> None:
        request = job.request
        workload = {"prompts": len(request.prompts), "n_predict": request.n_predict, "repeats": request.repeats}
        try:
            run = sweep.run()
            report, _analysis, failure = batch_report(run, request.batches, workload, method=request.method)
            job.report = report
            job.error = failure
            job.state = "cancelled" if job.cancel.is_set() else "incomplete" if failure else "done"
        except (MeasureClientError, MeasureError, httpx.HTTPError) as error:
            job.error = str(error)
            job.state = "cancelled" if job.cancel.is_set() else "failed"
        except Exception as error:  # a thread's error would otherwise vanish: the job says it
            job.error = f"the measurement stopped: {type(error).__name__}: {error}"
            job.state = "failed"
        finally:
            job.finished = time.time()
            job.label = job.state
            client.close()

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise JobError("job", f"no measurement {job_id!r} on this server (it keeps the last {MAX_JOBS_KEPT})")
        return job

    def cancel(self, job_id: str) -> Job:
        job = self.get(job_id)
        job.cancel.set()
        return job
