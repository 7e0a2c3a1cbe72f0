"""Step 5: chains against trees for a token budget, from the calibrated p where no tree was measured."""

from __future__ import annotations

from typing import Any

from app.model import limits
from app.model.arithmetic import trees
from app.model.limits import InputError
from app.service import plan_inputs
from app.service.decision import (
    CostRegime,
    tree_verification_assumption,
)
from app.service.inputs import link
from app.web.pages.controls import Reading
from app.web.pages.figures import COLORS, break_even, figure, line, marked
from app.web.pages.text import fixed, times
from app.web.pages.views.decide.controls import ACCEPTANCE, cost_query

# ---------------------------------------------------------------------------
# 4. Chains and trees


def _legend_name(name: str) -> str:
    """A family's name short enough for two legend entries a line on a phone (the hover says it in full)."""
    return name.replace(" independent sequences", " sequences")


def _acceptance(reading: Reading) -> tuple[float, ...]:
    """The positional acceptance from its text; a malformed list is refused naming its label."""
    text = reading.text("acceptance")
    try:
        return plan_inputs.tree_acceptance(text, ACCEPTANCE.name)
    except InputError as error:
        reading.correct(ACCEPTANCE, str(ACCEPTANCE.default), f"{ACCEPTANCE.label}: {error.message}")
        return tuple(limits.DEFAULT_TREE_ACCEPTANCE)


FAMILY_COLORS = (COLORS["muted"], COLORS["accent"], "#6c8ee0", COLORS["good"], "#7fbf9a", COLORS["best"])


def _family_style(index: int, kind: str) -> dict[str, Any]:
    strong = kind not in ("chain", "level_filled", "independent_sequences")
    return {
        "color": FAMILY_COLORS[index % len(FAMILY_COLORS)],
        "width": 3.5 if strong else 2,
        "dash": "dot" if kind == "independent_sequences" else "solid",
    }


def calibrated_tree_acceptance(p: float) -> tuple[float, ...]:
    """Positional acceptance from a chain's calibrated p: P1 = p (the top candidate is the chain's draft), and
    P2, P3, ... in the default's proportions over the remaining 1 - p, never above the one before."""
    default = limits.DEFAULT_TREE_ACCEPTANCE
    rest = [value * (1.0 - p) / (1.0 - default[0]) for value in default[1:]]
    values = [p]
    for value in rest:
        values.append(min(value, values[-1]))
    return trees.positional_acceptance(values)


def trees_part(
    reading: Reading, chosen: CostRegime, calibrated_p: float | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]:
    acceptance = _acceptance(reading)
    if calibrated_p is not None and reading.text("acceptance") == ACCEPTANCE.default:
        acceptance = calibrated_tree_acceptance(calibrated_p)
        uses = (
            f"Uses P1 = {fixed(acceptance[0], 3)}, the calibrated p, and P2.. in the default's proportions over the "
            "rest (a chain's counters say nothing of second choices): edit the field with your tree's own."
        )
    else:
        uses = "Uses the positional acceptance in the field (" + ",".join(f"{v:g}" for v in acceptance) + ")."
    budget = reading.integer("budget")
    comparison = trees.compare_trees(acceptance, budget, chosen.c, chosen.verify, limits.DEFAULT_TREE_WIDTHS)
    budgets = list(range(budget + 1))

    def bound(value: float | None) -> str:
        return "unbounded" if value is None else fixed(value, 2)

    summary = (
        f"Best: {comparison.best_family} with {comparison.best_budget} drafted tokens per step, "
        f"{times(comparison.best_speedup)} (the {trees.BEST_SPEEDUP_TREE} has depth {comparison.optimal_shape.depth}). "
        f"A chain never yields more than {bound(comparison.chain_bound)} tokens per step, "
        f"a binary tree {bound(comparison.binary_tree_bound)}, any tree {bound(comparison.full_bound)}."
    )
    tokens: list[dict[str, Any]] = []
    speedups: list[dict[str, Any]] = []
    for index, family in enumerate(comparison.families):
        most = family.kind == "best_speedup"
        style = _family_style(index, family.kind)
        # The tokens chart draws the most-tokens tree (any depth); the speedup chart the best-speedup tree.
        values = comparison.optimal_values if most else family.values
        tokens_name = trees.MOST_TOKENS_TREE if most else family.name
        tokens.append(
            line(
                _legend_name(tokens_name),
                budgets,
                values,
                line=style,
                hovertemplate=f"{tokens_name}<br>n = %{{x}}: %{{y:.3f}}<extra></extra>",
            )
        )
        speedups.append(
            line(
                family.name,
                budgets,
                family.speedups,
                line=style,
                showlegend=False,
                hovertemplate=f"{family.name}<br>n = %{{x}}: %{{y:.2f}}×<extra></extra>",
            )
        )
    for name, formula, value, color in (
        ("chain bound", "1/(1−P1)", comparison.chain_bound, COLORS["muted"]),
        ("binary-tree bound", "1/(1−P1−P2)", comparison.binary_tree_bound, COLORS["accent"]),
    ):
        if value is not None:
            tokens.append(
                line(
                    name,
                    [0, budget],
                    [value, value],
                    line={"color": color, "dash": "dash", "width": 1.5},
                    hovertemplate=f"{name} {formula} = {value:.2f}<extra></extra>",
                )
            )
    speedups.append(break_even(0, budget, width=1.5))
    speedups.append(
        marked(
            f"best: n = {comparison.best_budget}",
            [comparison.best_budget],
            [comparison.best_speedup],
            "n = %{x}<br>%{y:.2f}×<extra></extra>",
            size=15,
        )
    )
    x_title = "tokens verified per step (budget n)"
    tokens_figure = figure(tokens, x_title, "tokens per step", y={"rangemode": "tozero"})
    speedup_figure = figure(speedups, x_title, "speedup ×", y={"rangemode": "tozero"})
    address = link(
        "/api/v1/trees",
        {
            "acceptance": ",".join(f"{value:g}" for value in acceptance),
            "budget": budget,
            "c": reading.number("c"),
            **cost_query(reading, "tree_regime"),
            "widths": ",".join(str(width) for width in limits.DEFAULT_TREE_WIDTHS),
        },
    )
    part = {
        "summary": summary,
        "uses": uses,
        "assumption": tree_verification_assumption(chosen),
        "most_tokens": trees.MOST_TOKENS_TREE,
        "best_speedup": trees.BEST_SPEEDUP_TREE,
    }
    return part, tokens_figure, speedup_figure, address


# ---------------------------------------------------------------------------
