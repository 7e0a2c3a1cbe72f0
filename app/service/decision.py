"""Shared by the decision API and the command line: regimes, response models and plain-text tables."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from app.model import limits
from app.model.arithmetic import closed_form, draft_sources, trees
from app.model.arithmetic.closed_form import VerifyCost
from app.model.cost.regimes import Regime, RegimeName, default_setup, make_regime
from app.model.counters import calibration
from app.service.schemas.decision import (
    CalibrationOut,
    CountersOut,
    DepartureOut,
    DraftSourceOut,
    DraftSourcesOut,
    KPredictionOut,
    PositionOut,
    RegimeUsed,
    TreeFamilyOut,
    TreeShapeOut,
    TreesOut,
)
from app.service.schemas.fill import filled


@dataclass(frozen=True)
class CostRegime:
    regime: Regime
    c: float

    @property
    def verify(self) -> VerifyCost:
        return self.regime.verify

    def out(self) -> RegimeUsed:
        return RegimeUsed(
            name=self.regime.name.value,
            label=self.regime.label,
            beta=self.regime.beta,
            batch=self.regime.batch,
            c=self.c,
        )


def cost_regime(name: RegimeName | str, c: float, beta: float = limits.DEFAULT_BETA, batch: int = 1) -> CostRegime:
    """The verification cost to price cycles with; the roofline derives c from the batch size."""
    name = RegimeName(name)
    if name is RegimeName.ROOFLINE:
        regime = make_regime(name, draft_cost=c, setup=default_setup(), batch=batch)
        # Each v(k) of the roofline is a small numpy computation; a tree comparison asks for the same k many times.
        regime = replace(regime, verify=functools.lru_cache(maxsize=None)(regime.verify))
        return CostRegime(regime, regime.draft_cost)
    return CostRegime(make_regime(name, draft_cost=c, beta=beta), c)


# ---------------------------------------------------------------------------
# Response models


def calibration_out(result: calibration.Calibration, regime: CostRegime, source: str | None = None) -> CalibrationOut:
    counters = result.counters
    departure = result.departure
    search_max = result.predictions[-1].k
    return filled(
        CalibrationOut,
        result,
        source=source or result.source,
        regime=regime.out(),
        predictions=[filled(KPredictionOut, row) for row in result.predictions],
        k_search_max=search_max,
        limit_reached=closed_form.limit_reached(result.best_k, search_max),
        speculate=result.best_k > 0,
        positions=[filled(PositionOut, row) for row in result.positions],
        departure=None if departure is None else filled(DepartureOut, departure),
        counters=None
        if counters is None
        else filled(
            CountersOut,
            counters,
            schema_version=counters.schema,
            draft_tokens=counters.draft_tokens or 0.0,
            accepted_tokens=counters.accepted or 0.0,
            accepted_per_position=list(counters.per_position),
            emitted_tokens=counters.emitted,
            model_name=counters.label,
        ),
    )


def sources_out(k_max: int, regime: CostRegime, overrides: Mapping[str, tuple[float, float]]) -> DraftSourcesOut:
    evaluations = draft_sources.compare_sources(k_max, regime.verify, overrides)
    rows = []
    for evaluation in evaluations:
        source = evaluation.source
        rows.append(
            filled(
                DraftSourceOut,
                source,
                evaluation,
                limit_reached=closed_form.limit_reached(evaluation.best_k, k_max),
            )
        )
    return DraftSourcesOut(
        k_max=k_max,
        regime=regime.out(),
        derivation=" ".join(draft_sources.DERIVATION.split()),
        best_source=rows[0].id,
        sources=rows,
    )


def trees_out(acceptance: Sequence[float], budget: int, regime: CostRegime, widths: Sequence[int]) -> TreesOut:
    comparison = trees.compare_trees(acceptance, budget, regime.c, regime.verify, widths)
    shape_out = filled(TreeShapeOut, comparison.optimal_shape)
    return filled(
        TreesOut,
        comparison,
        acceptance=list(comparison.acceptance),
        budget=budget,
        regime=regime.out(),
        families=[filled(TreeFamilyOut, family) for family in comparison.families],
        most_tokens_values=comparison.optimal_values,
        best_speedup_shape=shape_out,
        optimal_shape=shape_out,
        verification_assumption=tree_verification_assumption(regime),
    )


def tree_verification_assumption(regime: CostRegime) -> str:
    """What a tree's verification costs under the regime, in one sentence."""
    name = regime.regime.name
    if name is RegimeName.ROOFLINE:
        setup = default_setup()
        return (
            f"Roofline of {setup.accelerator.name}, {setup.target.name} target, {setup.draft.name} draft at batch "
            f"{regime.regime.batch}: verifying n drafted tokens costs t(n + 1) / t(1) target passes, which grows "
            "with n once the n + 1 tokens make the step compute-bound; c is the draft's step time over the "
            f"target's ({regime.c:.4g}), one draft step per tree level."
        )
    if name is RegimeName.MEMORY_BOUND:
        return (
            "Memory-bound: verifying a tree of any size costs one target pass (v = 1), so the largest tree never "
            f"costs more to verify; c = {regime.c:g} per tree level."
        )
    if name is RegimeName.COMPUTE_BOUND:
        return f"Compute-bound: each drafted token costs a full target pass (v = n + 1); c = {regime.c:g} per level."
    return (
        f"Linear: each drafted token adds {regime.regime.beta:g} of a target pass (v = 1 + beta n); "
        f"c = {regime.c:g} per tree level."
    )
