"""The seed demo: three sliders, four readouts, the speedup curve, one animated run and many cycles.

``build_parts`` builds only the parts a page shows (the embed picks them with ``parts=``), so that an embed of the
curve alone never runs the 100,000-cycle simulation; ``build`` is the whole demo.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.model.arithmetic import closed_form, monte_carlo
from app.model.limits import (
    DEMO_BAND,
    DEMO_CHART_K_MIN,
    DEMO_RUN_TOKENS,
    DEMO_SIMULATED_CYCLES,
    K_MAX_LIMIT,
)
from app.service import core_inputs
from app.service.inputs import link
from app.web.pages.controls import Reading
from app.web.pages.figures import COLORS, break_even, figure, line, marked
from app.web.pages.inputs import control
from app.web.pages.page import Page, View
from app.web.pages.text import fixed, times

# The sliders span what the demo explores (the inputs' slider span); the API and the command line take the bounds.
CONTROLS = (
    control(core_inputs.K, kind="range", help="tokens the draft model guesses before the target checks them"),
    control(core_inputs.P, kind="range", step=0.01, help="chance the target accepts each drafted token"),
    control(core_inputs.C, kind="range", step=0.01, help="one draft step, in target forward passes"),
    control(core_inputs.SEED),
)


def _none_or_fixed(value: float | None, none: str = "none") -> str:
    return none if value is None else fixed(value, 2)


def chart_k_max(k: int, best: int) -> int:
    """The curve's x axis: at least DEMO_CHART_K_MIN, and wide enough to show both the current and the best k."""
    return max(DEMO_CHART_K_MIN, k, best)


def curve_figure(p: float, k: int, c: float, best: int, best_speedup: float) -> dict[str, Any]:
    """Speedup against k with the p +/- band, the break-even line and the current and best k marked.

    Each trace carries ``meta`` naming its role, so that the page's script can move the same traces
    while a slider is dragged, from the closed form's ES module, before the new view arrives.
    """
    k_max = chart_k_max(k, best)
    ks = list(range(k_max + 1))
    p_low, p_high = max(p - DEMO_BAND, 0.0), min(p + DEMO_BAND, 1.0)
    band = fixed(DEMO_BAND, 2)
    speedups = closed_form.speedup_curve(p, c, k_max)
    # the band's edges, drawn without lines: the lower one fills up to the upper
    edges = (
        (f"p + {band}", p_high, {"showlegend": False, "meta": "band_high"}),
        (f"band p ± {band}", p_low, {"fill": "tonexty", "fillcolor": COLORS["band"], "meta": "band_low"}),
    )
    data = [
        *(
            line(name, ks, closed_form.speedup_curve(edge, c, k_max), line={"width": 0}, hoverinfo="skip", **style)
            for name, edge, style in edges
        ),
        line(
            "speedup",
            ks,
            speedups,
            mode="lines+markers",
            line={"color": COLORS["accent"], "width": 3},
            hovertemplate="k = %{x}<br>speedup %{y:.2f}×<extra></extra>",
            meta="speedup",
        ),
        break_even(0, k_max, "break-even (S = 1)", meta="break_even"),
        line(
            f"current k = {k}",
            [k],
            [speedups[k]],
            mode="markers",
            marker={"size": 14, "color": "rgba(0,0,0,0)", "line": {"color": COLORS["ink"], "width": 2.5}},
            hovertemplate="current k = %{x}<br>%{y:.2f}×<extra></extra>",
            meta="current",
        ),
        marked(
            f"best k = {best}" if best else "best: do not speculate",
            [best],
            [best_speedup],
            "best k = %{x}<br>%{y:.2f}×<extra></extra>",
            meta="best",
        ),
    ]
    return figure(
        data,
        "draft length k",
        "speedup ×",
        x={"dtick": 1, "range": [-0.3, k_max + 0.3]},
        y={"rangemode": "tozero"},
    )


def run_figure(trace: monte_carlo.Trace) -> dict[str, Any]:
    """Tokens against target passes for the whole run; the page's script reveals it cycle by cycle."""
    passes = [0.0, *(cycle.total_passes for cycle in trace.cycles)]
    tokens = [0, *(cycle.total_tokens for cycle in trace.cycles)]
    return figure(
        [
            line(
                "speculative",
                passes,
                tokens,
                mode="lines+markers",
                line={"shape": "hv", "color": COLORS["good"], "width": 2.5},
                hovertemplate="%{x:.2f} passes: %{y} tokens<extra></extra>",
                meta="run",
            ),
            line(
                "plain decoding",
                [0, trace.passes],
                [0, trace.passes],
                line={"color": COLORS["muted"], "dash": "dot"},
                hoverinfo="skip",
            ),
        ],
        "target passes (time)",
        "tokens",
        x={"range": [0, max(trace.passes, 1.0) * 1.02]},
        y={"range": [0, trace.tokens * 1.05]},
    )


def histogram_figure(aggregate: monte_carlo.Aggregate) -> dict[str, Any]:
    ks = list(range(len(aggregate.histogram)))
    return figure(
        [
            {
                "type": "bar",
                "name": "simulated",
                "x": ks,
                "y": aggregate.histogram,
                "marker": {"color": COLORS["good"]},
                "opacity": 0.8,
            },
            line(
                "closed form",
                ks,
                aggregate.histogram_expected,
                mode="markers",
                marker={"color": COLORS["ink"], "size": 9, "symbol": "diamond"},
            ),
        ],
        "accepted drafts per cycle",
        "cycles",
        x={"dtick": 1},
        bargap=0.15,
    )


# What /embed may show, in this order; `parts=` picks a subset.
PARTS = ("controls", "readouts", "curve", "run", "histogram")


def _events(trace: monte_carlo.Trace) -> list[list[str]]:
    """Per cycle, what each token of the strip is: accepted or rejected drafts, then the target's token."""
    return [
        ["accepted"] * cycle.accepted + ["rejected"] * (cycle.drafted - cycle.accepted) + [cycle.target_token]
        for cycle in trace.cycles
    ]


def _strip(trace: monte_carlo.Trace) -> list[list[str]]:
    """The events as the strip draws them: the first rejected draft, then the drafts after it, never checked."""
    strip = []
    for cycle in trace.cycles:
        unchecked = max(cycle.drafted - cycle.accepted - 1, 0)
        rejected = ["rejected"] if cycle.drafted > cycle.accepted else []
        strip.append(["accepted"] * cycle.accepted + rejected + ["discarded"] * unchecked + [cycle.target_token])
    return strip


def run_summary(tokens: int, passes: float, shown: int, cycles: int) -> str:
    if shown == 0:
        return f"0 tokens in 0.00 passes (cycle 0 of {cycles})"
    return f"{tokens} tokens in {fixed(passes, 2)} passes: {times(tokens / passes)} (cycle {shown} of {cycles})"


def readouts(p: float, k: int, c: float) -> dict[str, str]:
    """The readouts the closed form gives at once (static/js/closed_form.js gives the same while dragging)."""
    best, best_value = closed_form.best_k(p, c, K_MAX_LIMIT)
    rate = closed_form.draft_acceptance_rate(p, k) if k > 0 else None
    return {
        "tokens": fixed(closed_form.expected_tokens(p, k), 2),
        "cost": fixed(closed_form.cost_per_cycle(k, c), 2),
        "speedup": times(closed_form.speedup(p, k, c)),
        "best_k": (f"≥ {best}" if best == K_MAX_LIMIT else str(best)) if best else "off",
        "best_speedup": times(best_value),
        "break_even": _none_or_fixed(closed_form.break_even_acceptance(k, c)),
        "acceptance_rate": _none_or_fixed(rate, "n/a"),
        "operations": times(closed_form.operations_increase(p, k)),
        "p": fixed(p, 2),
        "best_limit": (
            f"Best k is searched over 1 to {K_MAX_LIMIT}; at this p and c it still gains at {K_MAX_LIMIT}."
            if best == K_MAX_LIMIT
            else f"Best k is searched over 1 to {K_MAX_LIMIT}, whatever the chart shows."
        ),
    }


def _run(trace: monte_carlo.Trace) -> View:
    cycles = len(trace.cycles)
    return {
        "events": _events(trace),
        "strip": _strip(trace),
        "start": run_summary(0, 0.0, 0, cycles),
        "summaries": [
            run_summary(cycle.total_tokens, cycle.total_passes, shown, cycles)
            for shown, cycle in enumerate(trace.cycles, start=1)
        ],
    }


def _simulation(aggregate: monte_carlo.Aggregate) -> str:
    low, high = aggregate.interval_low, aggregate.interval_high
    return (
        f"{fixed(aggregate.mean_tokens_per_cycle, 2)} tokens per cycle "
        f"(95% interval {fixed(low, 3)} to {fixed(high, 3)}); "
        f"closed form {fixed(aggregate.expected_tokens, 2)}; "
        f"speedup {times(aggregate.empirical_speedup)}"
    )


def build_parts(reading: Reading, parts: Sequence[str]) -> View:
    """The view of the parts shown: the closed form's readouts always (they are cheap, and the page's text uses
    them), the curve, the run and the many-cycle simulation only where shown."""
    p, k, c, seed = reading.number("p"), reading.integer("k"), reading.number("c"), reading.integer("seed")
    point = {"k": k, "p": p, "c": c}
    view: View = {
        "readouts": readouts(p, k, c),
        "figures": {},
        "chart": {"k_min": DEMO_CHART_K_MIN, "band": DEMO_BAND, "k_search_max": K_MAX_LIMIT},
        "links": {
            "curve": link("/api/v1/curve", point),
            "simulate": link("/api/v1/simulate", {**point, "cycles": DEMO_SIMULATED_CYCLES, "seed": seed}),
            "run": link("/api/v1/run", {**point, "tokens": DEMO_RUN_TOKENS, "seed": seed}),
        },
        "parts": [part for part in PARTS if part in parts],
    }
    if "curve" in parts:
        best, best_value = closed_form.best_k(p, c, K_MAX_LIMIT)
        view["figures"]["curve"] = curve_figure(p, k, c, best, best_value)
    if "run" in parts:
        trace = monte_carlo.run_trace(p, k, c, DEMO_RUN_TOKENS, seed)
        view["figures"]["run"] = run_figure(trace)
        view["run"] = _run(trace)
    if "histogram" in parts:
        aggregate = monte_carlo.simulate(p, k, c, DEMO_SIMULATED_CYCLES, seed)
        view["figures"]["histogram"] = histogram_figure(aggregate)
        view["readouts"]["simulation"] = _simulation(aggregate)
    return view


def build(reading: Reading) -> View:
    return build_parts(reading, PARTS)


PAGE = Page(
    name="demo",
    path="/",
    nav="Demo",
    title="Draft, verify, keep the prefix",
    question="How much faster does speculative decoding make one sequence, for a draft length, acceptance and cost?",
    template="pages/demo.html",
    controls=CONTROLS,
    build=build,
)
