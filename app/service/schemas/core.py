"""Responses of the closed-form and Monte Carlo endpoints."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.model.arithmetic.monte_carlo import Cycle
from app.service.schemas.fill import RecordOut


class _AtAcceptanceAndK(BaseModel):
    """The acceptance p and draft length k an answer is for, echoed first."""

    p: float
    k: int


class _AtAcceptanceKAndCost(_AtAcceptanceAndK):
    """The same with the draft cost c."""

    c: float


class ExpectedTokens(_AtAcceptanceAndK):
    expected_tokens: float = Field(description="E[T] = (1 - p^(k+1)) / (1 - p): tokens per cycle.")
    accepted_distribution: list[float] = Field(description="P(A = j) for j = 0..k accepted drafts.")


class Cost(BaseModel):
    k: int
    c: float
    cost_per_cycle: float = Field(description="k*c + 1 target passes per cycle (free verification).")


class Speedup(_AtAcceptanceKAndCost):
    expected_tokens: float
    cost_per_cycle: float
    speedup: float = Field(description="expected_tokens / cost_per_cycle; 1 means no gain.")


K_SEARCH_MAX_DESCRIPTION = "Best k is searched over 1..k_search_max."
LIMIT_REACHED_DESCRIPTION = (
    "True when best_k is k_search_max, the longest draft searched: a longer draft may do better."
)


class OptimalK(BaseModel):
    p: float
    c: float
    k_max: int
    best_k: int = Field(description="argmax of speedup over 1..k_max, ties to the smaller k; 0 = do not speculate.")
    speedup: float
    speculate: bool
    k_search_max: int = Field(description=K_SEARCH_MAX_DESCRIPTION + " Equal to k_max.")
    limit_reached: bool = Field(description=LIMIT_REACHED_DESCRIPTION)


class BreakEven(_AtAcceptanceKAndCost):
    break_even_acceptance: float | None = Field(
        description="Acceptance p* where speedup(p*, k, c) = 1; null when even p = 1 does not pay."
    )
    max_draft_cost: float | None = Field(
        description="Largest draft cost that still breaks even at (p, k); null when none does."
    )
    leviathan_guarantee: float | None = Field(
        description="(1 + p) / (1 + c) when p > c: some k reaches at least this speedup (Leviathan Cor. 3.9)."
    )


class ServingMetrics(_AtAcceptanceAndK):
    draft_acceptance_rate: float = Field(description="Accepted / drafted: (p - p^(k+1)) / ((1 - p) k).")
    mean_acceptance_length: float = Field(description="Tokens per verification step; equals expected_tokens.")


class Operations(_AtAcceptanceAndK):
    c_ops: float
    operations_increase: float = Field(
        description="Factor by which arithmetic grows: (1-p)(k c_ops + k + 1) / (1 - p^(k+1)) (Leviathan Thm 3.11)."
    )


class CurvePoint(BaseModel):
    k: int
    speedup: float
    speedup_low: float = Field(description="Speedup at p - band (clipped to 0).")
    speedup_high: float = Field(description="Speedup at p + band (clipped to 1).")
    expected_tokens: float
    cost_per_cycle: float


class Curve(_AtAcceptanceKAndCost):
    k_max: int = Field(description="The chart's x axis: points run over k = 0..k_max (at least k).")
    band: float
    c_ops: float = Field(description="Arithmetic of a draft step relative to a target step, for operations_increase.")
    p_low: float
    p_high: float
    expected_tokens: float
    cost_per_cycle: float
    speedup: float
    best_k: int = Field(
        description="argmax of speedup over 1..k_search_max (not limited to the chart's k_max), ties to the "
        "smaller k; 0 = do not speculate."
    )
    best_speedup: float
    k_search_max: int = Field(description=K_SEARCH_MAX_DESCRIPTION + " Independent of k_max.")
    limit_reached: bool = Field(description=LIMIT_REACHED_DESCRIPTION)
    break_even_speedup: float = Field(description="The line S = 1.")
    break_even_acceptance: float | None
    max_draft_cost: float | None
    leviathan_guarantee: float | None
    draft_acceptance_rate: float | None
    operations_increase: float = Field(
        description="Arithmetic grows by (1-p)(k c_ops + k + 1) / (1 - p^(k+1)) at the given c_ops "
        "(Leviathan Thm 3.11)."
    )
    accepted_distribution: list[float]
    points: list[CurvePoint]


class RunCycle(
    RecordOut,
    record=Cycle,
    descriptions={
        "rejected_at": "0-based draft position of the first rejection; null if all accepted.",
        "target_token": '"correction" after a rejection, "bonus" after k acceptances, "plain" at k = 0.',
    },
):
    pass


class _SeededRun(_AtAcceptanceKAndCost):
    """The inputs a seeded Monte Carlo answer echoes first."""

    seed: int
    rho: float = Field(default=0.0, description="Lag-1 correlation of acceptances; 0 is i.i.d.")


class Run(_SeededRun):
    tokens: int
    passes: float
    speedup: float
    cycles: list[RunCycle]


class Simulation(_SeededRun):
    markov_expected_tokens: float | None = Field(
        default=None, description="Exact tokens per cycle under the bursty (Markov) model; null when rho = 0."
    )
    cycles: int
    mean_tokens_per_cycle: float
    interval_95: tuple[float, float] = Field(description="95% confidence interval of the mean tokens per cycle.")
    standard_error: float
    expected_tokens: float
    histogram: list[int] = Field(description="Cycles with j accepted drafts, j = 0..k.")
    histogram_expected: list[float] = Field(description="Closed-form count for each j over the same number of cycles.")
    empirical_speedup: float
    closed_form_speedup: float


class Health(BaseModel):
    status: str
    version: str
