"""Responses of the decision endpoints: calibration, draft sources and token trees."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.model.arithmetic.draft_sources import DraftSource
from app.model.arithmetic.trees import TreeFamily, TreeShape
from app.model.counters.calibration import IidDeparture, KPrediction, PositionAcceptance
from app.service.schemas.fill import RecordOut


class RegimeUsed(BaseModel):
    name: str = Field(description="memory-bound, compute-bound, linear or roofline.")
    label: str
    beta: float | None = Field(default=None, description="Verification cost per drafted token (linear regime).")
    batch: int | None = Field(default=None, description="Batch size (roofline regime).")
    c: float = Field(description="Draft cost per draft step used, in target passes (the roofline derives it).")


class KPredictionOut(RecordOut, KPrediction):
    pass


class PositionOut(
    RecordOut,
    PositionAcceptance,
    descriptions={
        "position": "Draft position, 1-based.",
        "accepted": "Drafts in which at least this many tokens were accepted.",
        "rate": "accepted / drafts; i.i.d. acceptance predicts p^position.",
        "conditional": "accepted here / accepted at the previous position; i.i.d. acceptance predicts p.",
        "iid_rate": "p^position at the inferred p.",
    },
):
    pass


class DepartureOut(
    RecordOut,
    IidDeparture,
    descriptions={
        "chi_square": "Pearson chi-square of the accepted-length histogram against the truncated geometric.",
        "max_conditional_deviation": "Largest |conditional acceptance - p| over positions.",
        "max_rate_deviation": "Largest |rate - p^position| over positions.",
        "consistent_with_iid": "p_value >= 0.01; null when k = 1 (one parameter fits two outcomes exactly).",
        "small_expected_counts": "Some expected count is below 5: the chi-square is approximate.",
    },
):
    pass


class CountersOut(BaseModel):
    schema_version: str = Field(description="v1 (drafts counter) or v0 (older vLLM: emitted tokens, no drafts).")
    drafts: float | None
    draft_tokens: float
    accepted_tokens: float
    accepted_per_position: list[float]
    emitted_tokens: float | None
    model_name: str | None
    series: int = Field(description="Label sets summed (engines).")


class CalibrationOut(BaseModel):
    source: str = Field(description="draft_rate, mean_length, counters or exposition.")
    k: int = Field(description="Draft length the measurement was taken at.")
    acceptance: float = Field(description="The inferred per-token acceptance p.")
    estimator: str
    draft_acceptance_rate: float = Field(description="Accepted / drafted, as engines report it.")
    mean_acceptance_length: float = Field(description="Tokens per verification, bonus token included (E[T]).")
    acceptance_from_mean_length: float
    acceptance_from_draft_rate: float
    regime: RegimeUsed
    predictions: list[KPredictionOut] = Field(description="Predicted tokens, cost and speedup for k = 0..k_max.")
    best_k: int = Field(description="Recommended draft length; 0 = do not speculate.")
    k_search_max: int = Field(description="Best k is searched over 1..k_search_max (the k_max asked).")
    limit_reached: bool = Field(description="True when best_k is k_search_max: a longer draft may do better.")
    best_speedup: float
    speculate: bool
    speedup_at_k: float = Field(description="Observed tokens per cycle over the predicted cost at the measured k.")
    positions: list[PositionOut]
    departure: DepartureOut | None
    counters: CountersOut | None
    notes: list[str]


class DraftSourceOut(
    RecordOut,
    DraftSource,
    descriptions={
        "kind": "draft_model, ngram, heads or feature.",
        "method": "What the method is, with its paper.",
        "mean_accepted_tokens": "Measured tokens per verification tau (bonus included).",
        "measurement": "Where tau and the speedup come from.",
        "reference_depth": "Draft depth d of that measurement.",
        "tree_nodes": "Candidates verified per step in that measurement; null for a chain.",
        "acceptance": "Chain-equivalent p: E[T](p, d) = tau (editable).",
        "draft_cost": "c = (tau / S - 1) / d (editable).",
    },
):
    accepted_per_draft_cost: float | None = Field(
        description="Accepted drafts per unit of draft cost at the reference depth, (E[T] - 1) / (d c). It leaves "
        "the verification pass out, so it does not rank sources: speedup_at_reference (tokens per unit of the "
        "whole cycle's cost) does."
    )
    accepted_per_draft_cost_at_best_k: float | None
    expected_tokens_at_reference: float
    speedup_at_reference: float
    best_k: int
    best_speedup: float
    expected_tokens_at_best_k: float
    limit_reached: bool = Field(
        description="True when best_k is k_max, the longest draft searched: a longer one may do better."
    )
    speedups: list[float] = Field(description="Predicted speedup for k = 0..k_max under the chosen regime.")


class DraftSourcesOut(BaseModel):
    k_max: int
    regime: RegimeUsed
    derivation: str
    best_source: str = Field(description="Source with the highest predicted speedup under the chosen regime.")
    sources: list[DraftSourceOut] = Field(description="Best predicted speedup first.")


class TreeFamilyOut(
    RecordOut,
    TreeFamily,
    descriptions={
        "kind": "chain, level_filled, independent_sequences or best_speedup (the best-speedup tree: per budget, the "
        "depth that maximises speedup).",
        "values": "Expected tokens per verification for budgets n = 0..budget.",
        "speedups": "values / (depth c + v(n)) for n = 0..budget.",
        "bound": "Limit of values as the budget grows; null when unbounded.",
    },
):
    pass


class TreeShapeOut(
    RecordOut,
    TreeShape,
    descriptions={
        "parents": "Parent of each node in insertion order; -1 is the root.",
        "ranks": "Rank of each node among its siblings (1 = the draft's top candidate).",
        "reach": "Probability that each node's token is accepted.",
    },
):
    pass


class TreesOut(BaseModel):
    acceptance: list[float] = Field(description="Positional acceptance P_1 >= P_2 >= ...")
    budget: int
    regime: RegimeUsed
    chain_bound: float | None = Field(description="1 / (1 - P_1).")
    binary_tree_bound: float | None = Field(description="1 / (1 - (P_1 + P_2)).")
    full_bound: float | None = Field(description="1 / (1 - sum of all P_i): no tree does better.")
    families: list[TreeFamilyOut]
    most_tokens_values: list[float] = Field(
        description="The most-tokens tree: most tokens per verification at each budget n = 0..budget, any depth, "
        "draft cost and verification ignored."
    )
    optimal_values: list[float] = Field(description="Same as most_tokens_values (older name).")
    best_family: str
    best_budget: int
    best_speedup: float
    best_speedup_shape: TreeShapeOut = Field(
        description="The best-speedup tree at its best budget and depth (the family of kind best_speedup)."
    )
    optimal_shape: TreeShapeOut = Field(description="Same as best_speedup_shape (older name).")
    verification_assumption: str = Field(
        description="How verifying a tree of n drafted tokens is priced, v(n), and where the draft cost c comes from."
    )
