"""From a closed-form question to its response model: shared by the API router and the command line."""

from __future__ import annotations

from app.model.arithmetic import closed_form
from app.model.limits import K_SEARCH_MAX
from app.service.schemas.core import Curve, CurvePoint, OptimalK, Speedup


def build_speedup(p: float, k: int, c: float) -> Speedup:
    return Speedup(p=p, k=k, c=c, **_cycle_readouts(p, k, c))


def _cycle_readouts(p: float, k: int, c: float) -> dict[str, float]:
    """Tokens per cycle, target passes per cycle and speedup at (p, k, c)."""
    return {
        "expected_tokens": closed_form.expected_tokens(p, k),
        "cost_per_cycle": closed_form.cost_per_cycle(k, c),
        "speedup": closed_form.speedup(p, k, c),
    }


def build_optimal_k(p: float, c: float, k_max: int) -> OptimalK:
    best, value = closed_form.best_k(p, c, k_max)
    return OptimalK(
        p=p,
        c=c,
        k_max=k_max,
        best_k=best,
        speedup=value,
        speculate=best > 0,
        k_search_max=k_max,
        limit_reached=closed_form.limit_reached(best, k_max),
    )


def build_curve(p: float, k: int, c: float, k_max: int, band: float, c_ops: float = 0.0) -> Curve:
    """Everything the demo's chart and readouts show, from the model layer.

    The points run over the chart's k = 0..max(k_max, k); best k is searched over 1..K_SEARCH_MAX whatever
    the chart shows.
    """
    k_max = max(k_max, k)
    p_low, p_high = max(p - band, 0.0), min(p + band, 1.0)
    points = [
        CurvePoint(
            k=j,
            speedup=closed_form.speedup(p, j, c),
            speedup_low=closed_form.speedup(p_low, j, c),
            speedup_high=closed_form.speedup(p_high, j, c),
            expected_tokens=closed_form.expected_tokens(p, j),
            cost_per_cycle=closed_form.cost_per_cycle(j, c),
        )
        for j in range(k_max + 1)
    ]
    best = build_optimal_k(p, c, K_SEARCH_MAX)  # whatever the chart shows
    return Curve(
        **best.model_dump(include={"best_k", "k_search_max", "limit_reached"}),
        best_speedup=best.speedup,
        p=p,
        k=k,
        c=c,
        k_max=k_max,
        band=band,
        c_ops=c_ops,
        p_low=p_low,
        p_high=p_high,
        **_cycle_readouts(p, k, c),
        break_even_speedup=1.0,
        break_even_acceptance=closed_form.break_even_acceptance(k, c),
        max_draft_cost=closed_form.max_draft_cost(p, k),
        leviathan_guarantee=closed_form.leviathan_guarantee(p, c),
        draft_acceptance_rate=closed_form.draft_acceptance_rate(p, k) if k > 0 else None,
        operations_increase=closed_form.operations_increase(p, k, c_ops),
        accepted_distribution=closed_form.accepted_distribution(p, k),
        points=points,
    )
