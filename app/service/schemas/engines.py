"""Responses of the engine endpoints: calibration from any engine's report, configs, step-time fits."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.service.schemas.decision import CalibrationOut
from app.service.schemas.regimes import AccuracyOut, ScheduleOut


class ClassCalibrationOut(BaseModel):
    label: str | None = Field(description="Value of the class label (e.g. model_name); null for the whole report.")
    p: float = Field(description="Per-token acceptance p (Leviathan's alpha).")
    p_low: float | None = Field(description="Lower end of the interval of p; null when the report holds no counts.")
    p_high: float | None
    interval_level: float
    interval_method: str
    k: int = Field(description="Draft length of the measurement.")
    k_source: str = Field(description="Where k came from: given, per-position counters, the counts, server args...")
    cycles: float | None = Field(description="Verifications (drafts) counted; null when only a mean was reported.")
    batch: float | None = Field(description="Sequences running, where the report says (vllm:num_requests_running).")
    calibration: CalibrationOut = Field(description="p, per-position fit, test of independence and best k.")
    notes: list[str]


class EngineCalibrationOut(BaseModel):
    engine: str = Field(description="vllm, sglang, trtllm or llamacpp.")
    engine_version: str | None = Field(
        default=None, description="The engine version whose format the report was read as (see engine-config)."
    )
    format_versions: list[str] = Field(default_factory=list, description="The engine versions that write this format.")
    sources: list[str] = Field(
        default_factory=list, description="Engine source files (repository: path @ commit) that define the format."
    )
    format: str = Field(description="The detected format.")
    format_description: str
    label_name: str = Field(description="The label that splits a Prometheus scrape into classes.")
    label: str | None
    p: float
    p_low: float | None
    p_high: float | None
    interval_level: float
    interval_method: str
    k: int
    k_source: str
    cycles: float | None
    batch: float | None
    calibration: CalibrationOut
    classes: list[ClassCalibrationOut] = Field(
        description="One entry per value of the class label; the fields above are the single class, or all classes "
        "summed when they share k."
    )
    notes: list[str]


class EngineConfigOut(BaseModel):
    engine: str
    engine_version: str = Field(description="The engine version the config is written for (the newest by default).")
    engine_versions: list[str] = Field(description="Every version the product knows for this engine, oldest first.")
    p: float
    k_max: int
    max_batch_that_fits: int
    batch_limit: int
    headline: str
    speculate: bool = Field(description="False when no k pays at any batch that fits: leave speculation off.")
    config: dict[str, Any] | None = Field(description="The engine's own keys (JSON); null when speculation is off.")
    flags: list[str] = Field(description="Command-line flags, where the engine takes flags.")
    text: str = Field(description="Ready to paste: the JSON, YAML or command line.")
    files: dict[str, str] = Field(
        default_factory=dict, description="Files the flags name, by name (SGLang's adaptive config), with their text."
    )
    tree: dict[str, Any] | None = Field(description="Optimal tree as path lists (vLLM / TensorRT-LLM), when asked.")
    schedule: ScheduleOut
    engine_k_by_batch: list[int] = Field(
        default_factory=list,
        description="The draft length the engine runs at batch 1..batch_limit, read back from the config the way "
        "the engine reads it; empty when speculation is off or a value is left for you to fill in.",
    )
    differs_at: list[int] = Field(
        default_factory=list, description="Batches where the engine runs another k than the schedule."
    )
    placeholders: list[str] = Field(
        default_factory=list, description="Values to fill in before the engine accepts the config (the draft model)."
    )
    acceptance_model: str = Field(
        default="", description="Where tokens per verification come from: the measured profile, or the i.i.d. p."
    )
    iid_differs_at: list[int] = Field(
        default_factory=list,
        description="With a measured profile: batches where the i.i.d. model at p would run another k.",
    )
    sources: list[str] = Field(
        description="Engine source files (repository: path @ commit, or the change) that define the version's format."
    )
    accuracy: AccuracyOut | None = Field(
        default=None, description="Where the schedule this config runs comes from, how far off to expect it."
    )
    notes: list[str]


class StepPointOut(BaseModel):
    batch: int
    kind: str = Field(description="target (one forward pass over `tokens` per sequence) or cycle (drafts + verify).")
    tokens: int | float = Field(
        description="Tokens per sequence verified (target; a mean over steps may be fractional) or draft length k "
        "(cycle)."
    )
    measured_ms: float
    fitted_ms: float


class StepCostOut(BaseModel):
    """The named terms of one decoding step fitted to the rows, without hardware figures."""

    model: str = Field(description="t(B, n) over B sequences of n tokens each through the target.")
    fixed_ms: float = Field(description="What a step costs whatever the batch.")
    multi_token_ms: float = Field(description="What a pass over more than one token adds once (matrix kernels).")
    per_sequence_ms: float = Field(description="What each sequence adds to a step.")
    per_extra_token_ms: float = Field(description="Each further token a sequence verifies.")
    per_draft_step_ms: float = Field(description="A draft model's own fixed time per draft step.")
    draft_multi_sequence_ms: float = Field(
        description="What a draft step over more than one sequence adds, per draft step (the draft's matrix kernels)."
    )
    fitted: list[str] = Field(description="The terms the rows identify.")
    kept: dict[str, str] = Field(description="Terms kept at 0, each with the reason the rows cannot identify it.")
    rms_relative_error: float | None


class StepFitOut(BaseModel):
    format: str = Field(description="csv, vllm-dynamic-config, sglang-bench-speculative or trtllm-iteration-stats.")
    rows: int
    bandwidth_efficiency: float
    compute_efficiency: float
    overhead_us: float
    rms_relative_error: float = Field(description="Root mean square of (fitted - measured) / measured.")
    max_relative_error: float
    at_bounds: list[str] = Field(description="Fitted parameters that sit at a bound of their range.")
    points: list[StepPointOut]
    step_cost: StepCostOut | None = Field(
        default=None, description="The same rows fitted as named terms of a step (app/model/cost/step_cost.py)."
    )
    schedule: ScheduleOut | None = Field(description="The schedule from the fitted model, when p is given.")
    holdout_error: float | None = Field(
        default=None,
        description="Out of sample: each batch's steps predicted by the fit to the other batches, median "
        "|predicted - measured| / measured; null with one batch size.",
    )
    holdout_batches: int = Field(default=0, description="The batches left out in turn.")
    query: str = Field(
        default="",
        description="The fitted terms as query parameters, ready to add to the same setup's query on "
        "/api/v1/regimes/speedup-vs-batch, /regimes/schedule, /engine-config, /rules, /dashboard and /batch: "
        "their answers then use them and say 'measured' (fit_steps, fit_error) instead of the defaults.",
    )
    accuracy: AccuracyOut | None = Field(default=None, description="How good the fitted terms are.")
    notes: list[str]
