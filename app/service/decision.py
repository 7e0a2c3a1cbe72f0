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
            accepted_per_position=list(counters.accepted_per_position),
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
    shape = comparison.optimal_shape
    shape_out = filled(
        TreeShapeOut,
        shape,
        parents=list(shape.parents),
        ranks=list(shape.ranks),
        depths=list(shape.depths),
        reach=list(shape.reach),
    )
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


# ---------------------------------------------------------------------------
# Plain text for the command line


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render_calibration_text(result: CalibrationOut) -> str:
    lines = [
        f"p = {result.acceptance:.4f}  (from {result.source} at k = {result.k}; {result.estimator})",
        f"draft acceptance rate {result.draft_acceptance_rate:.4f}, mean acceptance length "
        f"{result.mean_acceptance_length:.4f} tokens per verification",
        f"regime: {result.regime.label}, c = {result.regime.c:g}",
    ]
    if result.best_k:
        lines.append(f"recommended k = {result.best_k}: speedup {result.best_speedup:.3f}x")
        if result.limit_reached:
            lines.append(
                f"limit reached: k_max = {result.k_search_max} is the longest draft searched; a longer one may do "
                "better (raise --k-max)"
            )
    else:
        lines.append("recommended: do not speculate (no k beats plain decoding)")
    if result.positions:
        lines.append("")
        lines.append("position  accepted/draft  conditional  i.i.d. p^i")
        for position in result.positions:
            lines.append(
                f"{position.position:>8}  {position.rate:>14.4f}  "
                f"{_number(position.conditional, 4):>11}  {position.iid_rate:>10.4f}"
            )
    if result.departure is not None:
        departure = result.departure
        verdict = {True: "consistent with", False: "departs from", None: "cannot be tested against"}[
            departure.consistent_with_iid
        ]
        lines.append(
            f"acceptance {verdict} i.i.d.: chi-square {_number(departure.chi_square, 2)} on "
            f"{departure.degrees_of_freedom} df, p-value {_number(departure.p_value, 4)}, "
            f"max |conditional - p| {departure.max_conditional_deviation:.4f}"
        )
    lines.append("")
    lines.append("   k  tokens/cycle  cost/cycle  speedup")
    for row in result.predictions:
        marker = "  <- best" if row.k == result.best_k and row.k else ""
        lines.append(
            f"{row.k:>4}  {row.expected_tokens:>12.3f}  {row.cost_per_cycle:>10.3f}  {row.speedup:>7.3f}{marker}"
        )
    lines.extend(f"note: {note}" for note in result.notes)
    return "\n".join(lines)


def render_sources_text(result: DraftSourcesOut) -> str:
    lines = [
        f"regime: {result.regime.label}; k searched up to {result.k_max}",
        "",
        f"{'source':<48} {'tau':>5} {'S meas':>6} {'d':>3} {'p':>6} {'c':>6} "
        f"{'acc/cost':>8} {'best k':>6} {'S best':>6}",
    ]
    for row in result.sources:
        per_cost = _number(row.accepted_per_draft_cost, 2)
        name = row.name + (" (edited)" if row.edited else "")
        lines.append(
            f"{name:<48} {row.mean_accepted_tokens:>5.2f} {row.measured_speedup:>6.2f} {row.reference_depth:>3} "
            f"{row.acceptance:>6.3f} {row.draft_cost:>6.3f} {per_cost:>8} {row.best_k:>6} {row.best_speedup:>6.3f}"
        )
    limited = [row.id for row in result.sources if row.limit_reached]
    if limited:
        lines.append(
            f"limit reached for {', '.join(limited)}: best k is k_max = {result.k_max}, the longest draft searched "
            "(raise --k-max)"
        )
    lines.append("")
    lines.append(
        "acc/cost: accepted drafts per unit of draft cost at the measured depth d; it leaves the verification pass "
        "out, so sources are ranked by speedup (tokens per unit of draft and verification cost)"
    )
    lines.extend(
        f"{row.id}: {row.method}. Measured: {row.measurement}; depth: {row.depth_source}" for row in result.sources
    )
    return "\n".join(lines)


def render_trees_text(result: TreesOut, every: int = 8) -> str:
    lines = [
        f"positional acceptance P = {', '.join(f'{value:g}' for value in result.acceptance)}; "
        f"regime: {result.regime.label}, c = {result.regime.c:g} per tree level",
        f"bounds: chain 1/(1-P1) = {_number(result.chain_bound)}, binary tree 1/(1-(P1+P2)) = "
        f"{_number(result.binary_tree_bound)}, any tree 1/(1-sum P) = {_number(result.full_bound)}",
        f"verification: {result.verification_assumption}",
        "",
        "expected tokens per verification by budget n (drafted tokens):",
    ]
    budgets = sorted({*range(0, result.budget + 1, every), result.budget})
    header = f"{'tree':<28}" + "".join(f"{n:>8}" for n in budgets)
    lines.append(header)
    for family in result.families:
        values = result.most_tokens_values if family.kind == "best_speedup" else family.values
        name = f"{trees.MOST_TOKENS_TREE} (any depth)" if family.kind == "best_speedup" else family.name
        lines.append(f"{name:<28}" + "".join(f"{values[n]:>8.3f}" for n in budgets))
    lines.append("")
    lines.append(
        f"speedup by budget (the {trees.BEST_SPEEDUP_TREE}: depth chosen for speed, one draft step per level):"
    )
    lines.append(header)
    for family in result.families:
        lines.append(f"{family.name:<28}" + "".join(f"{family.speedups[n]:>8.3f}" for n in budgets))
    lines.append("")
    lines.append(
        f"best: {result.best_family} with {result.best_budget} drafted tokens, speedup {result.best_speedup:.3f}x; "
        f"the {trees.BEST_SPEEDUP_TREE} there has depth {result.best_speedup_shape.depth}"
    )
    return "\n".join(lines)
