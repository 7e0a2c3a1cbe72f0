"""A batch sweep's report and a measure job as the API, the /decide page and ``measure --batch --format json``
show them: built from the sweep's records (:mod:`app.model.live.measure_batches`), which it holds as they are
(a sample, a cell, a hold-out error and a schedule step are the model's own dataclasses), typed to the leaf."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.model import engines
from app.model.cost.regimes import ScheduleStep
from app.model.live.measure import Analysis, Sample
from app.model.live.measure_batches import CellResult, HoldoutError
from app.service.schemas.engines import StepCostOut
from app.service.schemas.fill import RecordOut


class JobServer(BaseModel):
    url: str
    k: int | None = Field(description="Draft length read from the engine (0: no speculation); null until read")
    kind: str = Field(description="What drafts: the engine's speculative types, 'plain' or 'speculative'")
    speculative: bool
    requests: int = Field(description="Requests measured on it so far")
    engine: str = Field(description=f"One of {', '.join(engines.ENGINES)}")
    version: str | None = Field(description="The engine's own version, where it reports one")


class JobCell(BaseModel):
    url: str
    k: int | None
    batch: int
    round: int
    generated: int = Field(description="Tokens decoded by the batch's requests")
    ms_per_token: float | None = Field(description="Decode time per output token of one sequence (ms)")
    tokens_per_s: float | None = Field(description="Output tokens per second of the whole batch, wall clock")
    drafts: int = Field(description="Verifications the engine counted during the cell")
    accepted: int = Field(description="Draft tokens the engine accepted during the cell")


class CrossoverOut(BaseModel):
    k: int
    crossover_batch_measured: int | None = Field(description="First batch from which speculation stops paying")
    crossover_batch_predicted: int | None = Field(description="From the fit on the batches below the measured one")
    fitted_on_batches: list[int]
    predicted_in_measured_interval: bool | None
    note: str | None


class BestKAtBatch(BaseModel):
    batch: int
    measured: int | None
    predicted: int | None = Field(description="With that batch left out of the fit")


class BatchStepCostOut(StepCostOut):
    """The step cost fitted on every cell of a sweep, with the terms held at a value given from an earlier one."""

    given: dict[str, str] = Field(description="Terms held at a given value, with why the cells could not fit them")


class MeasuredConfig(BaseModel):
    """The engine's config for the measured schedule, read back as the engine reads it (or why none was)."""

    engine: str
    title: str
    version: str
    method: str | None
    steps: list[ScheduleStep]
    batch: int = Field(description="The batch the config was written for")
    error: str | None = Field(None, description="Why the engine refused to take it (a drafter or version)")
    config: dict[str, Any] | None = None
    flags: list[str] = []
    text: str | None = None
    files: dict[str, str] = {}
    runs: list[int] = []
    differs_at: list[int] = []
    placeholders: list[str] = []
    notes: list[str]


class BatchReport(BaseModel):
    """What `measure --batch --format json` writes and a finished job holds; the analysis's fields are null where
    the cells did not allow one."""

    servers: list[JobServer]
    batches: list[int]
    workload: dict[str, int]
    requests: int
    seconds: float
    stopped: str | None
    samples: list[Sample]
    ks: list[int] | None = None
    draft_model: bool | None = None
    cells: list[CellResult] | None = None
    crossover: list[CrossoverOut] | None = None
    best_k_by_batch: list[BestKAtBatch] | None = None
    step_cost: BatchStepCostOut | None = None
    holdout_errors: list[HoldoutError] | None = None
    engine_config: MeasuredConfig | None = None
    notes: list[str]


class MeasureJob(BaseModel):
    id: str
    state: str = Field(description="running, done, incomplete (stopped early or not analysable), failed or cancelled")
    servers: list[JobServer]
    batches: list[int]
    done: int = Field(description="Requests measured")
    planned: int = Field(description="Requests the sweep plans (0 until the servers are warmed up)")
    fraction: float = Field(description="done / planned")
    label: str = Field(description="What it is measuring now")
    seconds: float
    cells: list[JobCell] = Field(description="Every measured cell so far: (server, batch, round)")
    report: BatchReport | None = Field(
        description="Once finished: the report of `specdec-lab measure --batch --format json` (cells, crossover, "
        "step cost, notes)"
    )
    error: str | None = Field(description="Why it failed or stopped early, naming the server")


class SweepServer(BaseModel):
    url: str
    k: int | None
    kind: str
    speculative: bool
    draft_time_from_log: bool = Field(description="Whether the draft time came from the engine's log")
    requests: int


class SweepReport(
    RecordOut,
    Analysis,
    descriptions={
        "c": "The draft's cost per step over the target's, pooled over the sweep",
        "best_k_predicted": "By the closed form",
        "best_k_predicted_mixed": "By the form that counts the steps without a draft",
    },
):
    """What `measure --format json` writes: a sweep over draft lengths one request at a time, and its analysis."""

    servers: list[SweepServer]
    workload: dict[str, int]
    requests: int
    seconds: float
    stopped: str | None
    samples: list[Sample]
