"""Responses of the rollout endpoints: the plan of a pasted scrape per class, and the canary check over a
Prometheus.  The service builds them (the CLI writes the same as JSON); they give the answers a schema in the
OpenAPI document and hold every field the answers carry."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.model.live.rollout import AcceptanceCheck, SpeedupEstimate
from app.service.schemas.fill import RecordOut

# ---------------------------------------------------------------------------
# POST /api/v1/rollout/plan


class BatchesOut(BaseModel):
    samples: int = Field(description="Readings of the number of requests running (the batch) in the window.")
    histogram: dict[str, int] = Field(description="Readings per batch size.")
    quantiles: dict[str, int] = Field(description="The batch at the 50th, 90th and 99th percentiles (p50, p90, p99).")


class MeasuredAcceptanceOut(BaseModel):
    p: float
    low: float = Field(description="The 95% interval's lower end.")
    high: float
    k: int = Field(description="The draft length the class ran.")
    profile: list[float] = Field(description="Share of drafts accepted at each position, where the counts give it.")


class PlannedScheduleOut(BaseModel):
    best_k: list[int] = Field(description="The best k at batch 1, 2, ... up to the schedule's last batch.")
    off_from_batch: int | None = Field(description="The batch from which speculation stops paying (none: it pays).")
    headline: str


class PlannedConfigOut(BaseModel):
    text: str = Field(description="The engine's config as written for it (a command line, a file).")
    flags: list[str]
    config: Any = Field(description="The config as data, as the engine reads it.")


class GainOut(BaseModel):
    point: float = Field(description="The speedup weighted over the batches the class ran, at the measured p.")
    at_p_low: float
    at_p_high: float
    low: float = Field(description="The gain's lower end with the cost model's stated error.")
    high: float
    model_error: float = Field(description="The cost model's median error on published measurements.")


class PlanClassOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    class_: str = Field(alias="class", description="The class's label value ('' for the whole server).")
    intervals: list[dict[str, float] | None] = Field(description="Each interval's counts as read (null: not read).")
    contradicting_intervals: int = Field(description="Replica intervals left out: their counts contradicted.")
    batches: BatchesOut
    acceptance: MeasuredAcceptanceOut | None
    drafts: float | None = Field(description="Drafts (verifications) counted for the class.")
    schedule: PlannedScheduleOut | None
    config: PlannedConfigOut | None = Field(description="The config for the schedule, where the verdict turns it on.")
    verdict: str = Field(description="turn on, leave off or measure first.")
    reason: str
    gain: GainOut | None


class RolloutPlanOut(BaseModel):
    engine: str
    engine_version: str
    label: str = Field(description="The label whose values are the classes.")
    setup: str = Field(description="The setup the schedule was decided on, in words.")
    cost_model: str = Field(description="Where the cost model's figures come from and how far off they are.")
    classes: list[PlanClassOut] = Field(description="One per class, the surest gains first.")
    queries: list[str] = Field(
        default_factory=list, description="Every PromQL query asked of Prometheus (none for a pasted scrape)."
    )


# ---------------------------------------------------------------------------
# POST /api/v1/rollout/check


class SpeedupCheckOut(
    RecordOut,
    record=SpeedupEstimate,
    descriptions={
        "point": "The canary's speedup over control: the intervals' geometric mean.",
        "level": "The interval's confidence level.",
        "ratios": "Control's per-token time over the canary's, interval by interval.",
    },
    renames={"speedup": "point"},
    omit=("log_mean", "log_sd"),
):
    intervals: int = Field(description="Intervals with tokens decoded on both sides.")


class HalfCountsOut(BaseModel):
    drafts: float = Field(description="Drafts (verifications) counted over the half.")
    draft_tokens: float
    accepted: float = Field(description="Accepted draft tokens.")
    accepted_per_position: list[float] = Field(description="Drafts with at least position + 1 tokens accepted.")
    k: int | None = Field(description="The draft length the canary ran, where its counts give it.")


class CanaryCountsOut(BaseModel):
    halves: list[HalfCountsOut | None] = Field(
        description="The first half of the window, then the second (null: none)."
    )


class AcceptanceCheckOut(
    RecordOut, record=AcceptanceCheck, descriptions={"status": "holds, fell, rose, unknown or not speculating."}
):
    counts: CanaryCountsOut | None = Field(
        default=None, description="The canary's counts over each half of the window (drafts, tokens, per position)."
    )


class CheckClassOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    class_: str = Field(alias="class", description="The class's label value ('' for the whole server).")
    verdict: str = Field(description="promote, roll back or hold.")
    reason: str
    notes: list[str]
    more_intervals: int | None = Field(description="Intervals more that would let a held verdict be decided.")
    more_seconds: float | None
    speedup: SpeedupCheckOut
    acceptance: AcceptanceCheckOut
    intervals: list[dict[str, float | None]] = Field(description="Per interval: both sides' seconds and tokens.")


class DecodeTimeOut(BaseModel):
    seconds: str = Field(description="The engine's series of seconds spent decoding.")
    tokens: str
    first_tokens: str | None
    per_request: bool
    what: str = Field(description="What the ratio of the two measures, in words.")
    sources: list[str] = Field(description="Engine source files (repository: path @ commit) that define the series.")


class ReplicaReadingOut(BaseModel):
    seconds: list[float | None] | None = Field(description="The decode-seconds counter at each time (null: none).")
    tokens: list[float | None] | None = Field(description="The decoded-tokens counter at each time (null: none).")


class ReadingsOut(BaseModel):
    times: list[float] = Field(description="The window's start, then each interval's end, in seconds since the epoch.")
    canary: dict[str, ReplicaReadingOut] = Field(description="Per replica and class ('instance class').")
    control: dict[str, ReplicaReadingOut]


class QueryAskedOut(BaseModel):
    query: str = Field(description="The PromQL expression.")
    time: float | None = Field(default=None, description="An instant query's time (null for a range query).")
    start: float | None = Field(default=None, description="A range query's start, end and step.")
    end: float | None = None
    step: float | None = None
    series: int = Field(description="The series it answered.")


class RolloutCheckOut(BaseModel):
    verdict: str = Field(description="The overall verdict: promote, roll back or hold.")
    exit_code: int = Field(description="As the command line exits: 0 promote, 1 roll back, 3 hold.")
    prometheus: str
    engine: str
    engine_version: str
    label: str
    canary: str = Field(description="The canary's label matchers.")
    control: str
    window_s: float
    interval_s: float
    end: float = Field(description="The window's end, in seconds since the epoch.")
    decode_time: DecodeTimeOut
    replicas: dict[str, list[dict[str, str]]] = Field(description="The series each side's matchers selected.")
    readings: ReadingsOut = Field(description="The times read and what each side's queries answered.")
    classes: list[CheckClassOut]
    queries: list[QueryAskedOut] = Field(description="Every query asked of Prometheus, with what it answered.")
