"""Responses of the cost-regime endpoints: presets, verification cost, batch sweeps, schedules, tables."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.model.cost.presets import Accelerator, ModelSpec
from app.model.cost.published import Stretch
from app.model.cost.regimes import RooflineSetup, ScheduleStep, WinToLoss
from app.service.schemas.fill import RecordOut


class AcceleratorOut(
    RecordOut,
    Accelerator,
    descriptions={
        "bandwidth_tb_s": "Peak HBM bandwidth per device, TB/s.",
        "bf16_tflops": "Peak dense BF16 tensor throughput per device, TFLOPS (not sparsity).",
        "memory_gb": "Memory per device, GB.",
        "link_gb_s": "Interconnect bandwidth per device, both directions together, GB/s (NVLink, Infinity Fabric or "
        "PCIe); the all-reduces' payload crosses it at half this each way. Null: not priced.",
        "links": "Point-to-point links link_gb_s is split over, one to each peer (AMD Infinity Fabric's 7): with "
        "fewer peers than links the rest stand idle. Null: the devices meet in a switch (NVSwitch, PCIe).",
        "fp8_tflops": "Peak dense FP8 tensor throughput per device, TFLOPS: the rate FP8 weights multiply at (W8A8). "
        "Null: FP8 weights multiply at the BF16 rate.",
    },
):
    key: str = Field(description="Preset the values started from.")


class ModelOut(
    RecordOut,
    ModelSpec,
    descriptions={
        "total_params_b": "All parameters, billions (read from memory once all experts are hit).",
        "active_params_b": "Parameters one token uses, billions (2 FLOPs each per token).",
        "kv_tensors": "2 for separate keys and values, 1 for a shared latent (MLA).",
        "experts": "Routed experts per MoE layer; 1 for a dense model.",
        "hidden": "Width of the hidden state (what an all-reduce carries per token); null: query heads x head dim.",
    },
):
    key: str = Field(description="Preset the values started from.")
    routed_params_b: float = Field(description="Derived: parameters in routed experts.")
    shared_params_b: float = Field(description="Derived: parameters every token reads.")
    kv_values_per_token: int = Field(description="Derived: cached values per token over all layers.")


class SetupOut(
    RecordOut,
    RooflineSetup,
    descriptions={
        "overhead_per_sequence_us": "Time every target pass spends per sequence of the batch beyond its reads and "
        "arithmetic, microseconds.",
        "overhead_per_draft_step_us": "Fixed time per draft step, microseconds; null: as a pass.",
        "target_fp8": "True when the target's weights multiply in FP8 (fp8 weights), at the accelerator's FP8 rate.",
        "draft_fp8": "True when the draft's weights multiply in FP8, at the accelerator's FP8 rate.",
        "parallel_draft": "True when the draft proposes all k tokens in one pass over k positions (drafting=parallel); "
        "false for one token per pass.",
        "cycle_overhead_us": "What a speculative cycle adds beyond its passes, microseconds.",
        "cycle_overhead_per_sequence_us": "The same per sequence of the batch, microseconds.",
        "allreduce_us": "One all-reduce's latency over the devices (two per layer per pass; what it carries is "
        "priced from the accelerator's link), microseconds.",
    },
):
    """The roofline actually computed, after presets and overrides."""

    accelerator: AcceleratorOut
    target: ModelOut
    draft: ModelOut
    weights: str
    draft_weights: str
    kv_cache: str
    devices_auto: bool = Field(description="True when devices was chosen as the fewest that hold both models.")
    draft_step_overhead_us: float = Field(description="The fixed time each draft step is priced with, microseconds.")
    effective_bandwidth_tb_s: float = Field(description="Peak x devices x bandwidth efficiency.")
    effective_tflops: float = Field(description="Peak x devices x compute efficiency.")
    memory_capacity_gb: float
    operations_ratio: float = Field(description="Draft FLOPs per token over target FLOPs per token.")


class PresetList(BaseModel):
    accelerators: list[AcceleratorOut]
    models: list[ModelOut]
    weight_formats: dict[str, float] = Field(description="Bytes per parameter of each weight format.")
    kv_cache_formats: dict[str, float] = Field(description="Bytes per cached value of each KV-cache format.")
    regimes: list[str]
    defaults: SetupOut


class VerificationPoint(BaseModel):
    k: int
    verification_cost: float = Field(description="v(k) in target passes.")
    cost_per_cycle: float = Field(description="k c + v(k).")
    speedup: float
    step_ms: float | None = Field(default=None, description="Roofline only: time of the verification step.")
    memory_ms: float | None = None
    compute_ms: float | None = None
    compute_bound: bool | None = None


class VerificationCostOut(BaseModel):
    regime: str
    label: str
    p: float
    k: int
    k_max: int
    draft_cost: float = Field(description="c: given, or t_draft(B, 1) / t(B, 1) under the roofline.")
    beta: float | None
    batch: int | None
    expected_tokens: float
    cost_per_cycle: float
    speedup: float
    best_k: int = Field(description="0 means do not speculate.")
    best_speedup: float
    k_search_max: int = Field(description="Best k is searched over 1..k_search_max (equal to k_max).")
    limit_reached: bool = Field(
        description="True when a best k equals k_search_max, the longest draft searched: a longer one may do better."
    )
    break_even_acceptance: float | None
    max_draft_cost: float | None
    points: list[VerificationPoint] = Field(description="k = 0..k_max.")
    setup: SetupOut | None


class BatchPoint(BaseModel):
    batch: int
    speedup: float
    draft_cost: float
    verification_cost: float
    target_step_ms: float
    verify_step_ms: float
    draft_step_ms: float
    verify_compute_bound: bool
    best_k: int
    best_speedup: float
    memory_needed_gb: float
    fits: bool


class AccuracyOut(BaseModel):
    """Where a prediction comes from and how far off to expect it."""

    source: str = Field(
        description="defaults (the terms fitted to published measurements), measured (the terms a step fit gave, "
        "with fit_steps and fit_error) or given (set here)."
    )
    summary: str = Field(description="The same in one sentence.")
    median_error: float | None = Field(
        description="Median error of the defaults over every scored published point, each source predicted by terms "
        "fitted on the other sources."
    )
    worst_error: float | None
    published_points: int = Field(description="Published points the defaults are held to, leave-one-source-out.")
    crossover_measured: int | None = Field(description="A published sweep's batch where speculation stops paying.")
    crossover_predicted: int | None = Field(description="The same batch by the defaults.")
    fitted_terms: dict[str, float] = Field(
        default_factory=dict,
        description="Efficiencies and overheads fitted to every published source: the defaults.",
    )
    fitted_median_error: float | None = Field(
        default=None, description="The same as median_error (kept for older clients)."
    )
    fitted_worst_error: float | None = None
    fitted_points: int = Field(default=0, description="The same as published_points (kept for older clients).")
    measured_steps: int | None = Field(default=None, description="With source measured: the steps the terms fit.")
    published_sources: int = Field(default=0, description="Sources of the published points the error is over.")
    setup_class: str | None = Field(
        default=None, description="This setup's class: draft method x engine x accelerator family x context."
    )
    class_points: int = Field(default=0, description="Published points of this class (0: no published measurement).")
    class_median_error: float | None = Field(
        default=None, description="Leave-one-source-out median error on this class (from 3 points on)."
    )
    class_worst_error: float | None = Field(default=None, description="The worst on this class.")
    interval_spread: float | None = Field(
        default=None,
        description="The predicted speedup's interval is [S / (1 + spread), S (1 + spread)]: the leave-one-source-out "
        "error that holds at least 90% of the class's published errors (split-conformal) where it has 9 points or "
        "more; a class with fewer takes every published point's, widened to its own worst where that is wider "
        "(interval_from says whose).",
    )
    interval_from: str | None = Field(default=None, description="this class, or every published point.")
    measured_error: float | None = Field(
        default=None,
        description="With source measured: the fit's out-of-sample error (each batch predicted from the others).",
    )


class BatchSweepOut(BaseModel):
    p: float
    k: int
    k_max: int
    batch_max: int
    batch: int = Field(description="The batch size `current` describes.")
    expected_tokens: float
    break_even_speedup: float = 1.0
    crossover_range_low: int | None = Field(
        default=None,
        description="First batch at which the predicted speedup's interval (accuracy.interval_spread) holds 1.",
    )
    crossover_range_high: int | None = Field(
        default=None, description="Last such batch; null when the interval still holds 1 at batch_max or never does."
    )
    crossover_range_pays_past: bool | None = Field(
        default=None,
        description="True where past crossover_range_high the interval lies above 1 (the speedup rises again with "
        "the batch), false where below; null where crossover_range_high is null.",
    )
    crossover_ranges: list[StretchOut] = Field(
        default_factory=list,
        description="Each run of batches at which the interval holds 1, in order (crossover_range_low and _high "
        "are the first's start and the last's end).",
    )
    speedup_low: list[float] = Field(default_factory=list, description="The interval's lower edge at each batch.")
    speedup_high: list[float] = Field(default_factory=list, description="The interval's upper edge at each batch.")
    crossover_batch: int | None = Field(
        description="Batch size from which speculation at this k stops paying for good; null if it pays at batch_max."
    )
    first_loss_batch: int | None = Field(description="First batch size where speedup <= 1 (MoE may recover after).")
    best_crossover_batch: int | None = Field(description="Batch size from which no k in 1..k_max pays.")
    max_batch_that_fits: int = Field(description="Largest batch whose weights and KV caches fit in memory; 0 if none.")
    headline: str = Field(
        default="",
        description="One sentence on this k: where it loses (already at batch 1 for MoE targets), where it stops "
        "paying, and the largest batch that fits. The marks above count only batches that fit.",
    )
    current: BatchPoint
    batches: list[int] = Field(description="Log-spaced batch sizes 1..batch_max (and the crossover neighbours).")
    speedup: list[float]
    best_k: list[int]
    best_speedup: list[float]
    k_search_max: int = Field(description="Best k is searched over 1..k_search_max (equal to k_max).")
    limit_reached: bool = Field(
        description="True when a best k equals k_search_max, the longest draft searched: a longer one may do better."
    )
    draft_cost: list[float]
    verification_cost: list[float]
    verify_compute_bound: list[bool]
    accuracy: AccuracyOut | None = Field(default=None, description="Where these numbers come from, how far off.")
    fits: list[bool]
    setup: SetupOut


class StretchOut(
    RecordOut,
    Stretch,
    descriptions={
        "low": "First batch of a run at which the speedup's interval (the stated error) holds 1.",
        "high": "Last batch of that run; null where it still holds 1 at the last batch.",
        "pays_before": "Whether the interval lies above 1 just before the run (speculation surely pays there); null "
        "at the first batch.",
        "pays_past": "The same just after the run: true where the speedup rises again with the batch (a mixture of "
        "experts, a long context), false where it surely loses; null where the run reaches the last batch.",
    },
):
    pass


class ScheduleStepOut(RecordOut, ScheduleStep, descriptions={"k": "Draft length to run; 0 = speculation off."}):
    limit_reached: bool = Field(description="k is k_max, the longest draft searched: a longer one may do better.")


class ScheduleOut(BaseModel):
    p: float
    k_max: int
    batch_max: int
    max_batch_that_fits: int = Field(default=0, description="Largest batch whose weights and KV caches fit; 0 if none.")
    batch_limit: int = Field(default=0, description="min(batch_max, max_batch_that_fits): the last batch decided.")
    steps: list[ScheduleStepOut] = Field(description="Batch 1..batch_limit only: no k at a batch that does not fit.")
    thresholds: dict[str, int] = Field(
        description='Smallest batch size of each step -> k, e.g. {"1": 5, "40": 3, "300": 0}.'
    )
    off_from_batch: int | None = Field(
        description="Batch size from which speculation stays off, within the batches that fit; null if it pays to "
        "batch_limit."
    )
    off_range_low: int | None = Field(
        default=None,
        description="First batch at which the best speculating speedup's interval (the stated error of the setup's "
        "class, or every point's) holds 1: there whether speculation pays is within the error (off_ranges has each "
        "run of such batches); null if at no batch that fits.",
    )
    off_range_high: int | None = Field(
        default=None,
        description="Last batch at which that interval holds 1 (beyond it speculation surely loses, unless "
        "off_range_pays_past); null where it still holds 1 at the last batch decided.",
    )
    off_range_pays_past: bool | None = Field(
        default=None,
        description="True where past off_range_high the interval lies above 1: the speedup rises again with the "
        "batch (a mixture of experts, a long context) and speculation surely pays there; false where it surely "
        "loses there; null where off_range_high is null.",
    )
    off_ranges: list[StretchOut] = Field(
        default_factory=list,
        description="Each run of batches at which that interval holds 1, in order: off_range_low is the first's "
        "start and off_range_high the last's end, with batches between runs where speculation surely pays or "
        "surely loses.",
    )
    loses_at_batch_one: bool = Field(default=False, description="No k beats plain decoding even at batch 1.")
    headline: str = Field(default="", description="The decision in one sentence, memory included.")
    k_search_max: int = Field(description="Best k is searched over 1..k_search_max (equal to k_max).")
    limit_reached: bool = Field(
        description="True when a best k equals k_search_max, the longest draft searched: a longer one may do better."
    )
    setup: SetupOut
    accuracy: AccuracyOut | None = Field(default=None, description="Where the schedule comes from, how far off.")


class RegimeOut(BaseModel):
    name: str
    label: str
    draft_cost: float
    beta: float | None
    batch: int | None


class WinToLossOut(RecordOut, WinToLoss):
    pass


class MarkedCell(RecordOut, WinToLoss):
    """Both regimes at one (p, k) that need not lie on the grid (the page's current point)."""


class TableOut(BaseModel):
    p_values: list[float]
    k_values: list[int]
    regime_a: RegimeOut
    regime_b: RegimeOut
    speedup_a: list[list[float]] = Field(description="Rows follow p_values, columns k_values.")
    speedup_b: list[list[float]]
    win_to_loss_cells: int = Field(description="Cells that win (> 1) under regime A and lose (< 1) under B.")
    highlight: WinToLossOut | None = Field(description="The largest win under A that is a loss under B.")
    marked: MarkedCell = Field(description="Both regimes at the requested p and k.")
    setup: SetupOut | None = Field(description="Present when a side uses the roofline.")
