"""Step 4 on the page: the draft sources side by side on the whole cycle's cost."""

from __future__ import annotations

from typing import Any

from app.model.arithmetic import closed_form, draft_sources
from app.service.inputs import link
from app.web.pages.controls import Reading
from app.web.pages.figures import COLORS, figure, marked
from app.web.pages.text import fixed, times
from app.web.pages.views.decide.controls import SOURCE_CONTROLS, cost_query

# ---------------------------------------------------------------------------
# 2. Draft sources


def source_edits(reading: Reading) -> dict[str, tuple[float, float]]:
    """(p, c) of every source whose p or c differs from the cited value; the cited value exact where kept."""
    edits = {}
    for source in draft_sources.DEFAULT_SOURCES:
        p_control, c_control = SOURCE_CONTROLS[source.id]
        p, c = reading.number(p_control.name), reading.number(c_control.name)
        if p != p_control.default or c != c_control.default:
            edits[source.id] = (
                p if p != p_control.default else source.acceptance,
                c if c != c_control.default else source.draft_cost,
            )
    return edits


def _short(name: str) -> str:
    """The short name in brackets ("EAGLE-2", "PLD", ...), which keeps a chart's axis labels level."""
    return name[name.rindex("(") + 1 : -1] if name.endswith(")") and "(" in name else name


def sources_part(reading: Reading, verify: closed_form.VerifyCost) -> tuple[dict[str, Any], dict[str, Any], str]:
    edits = source_edits(reading)
    evaluations = draft_sources.compare_sources(reading.integer("k_max"), verify, edits)
    by_id = {evaluation.source.id: evaluation for evaluation in evaluations}
    ordered = [by_id[source_id] for source_id in draft_sources.SOURCE_IDS]
    rows = {}
    for evaluation in ordered:
        source = evaluation.source
        depth = str(source.reference_depth)
        rows[source.id] = {
            "name": source.name,
            "tau": fixed(source.mean_accepted_tokens, 2),
            "speedup": times(source.measured_speedup),
            "depth": f"{depth} (tree of {source.tree_nodes})" if source.tree_nodes else depth,
            "per_cost": "free"
            if evaluation.accepted_per_draft_cost is None
            else fixed(evaluation.accepted_per_draft_cost, 2),
            "per_cycle": fixed(evaluation.speedup_at_reference, 2),
            "best_k": str(evaluation.best_k) if evaluation.best_k else "off",
            "best_speedup": times(evaluation.best_speedup),
            "edited": source.edited,
        }
    best = evaluations[0]
    summary = (
        f"Fastest under this verification cost: {best.source.name}, {times(best.best_speedup)} at k = {best.best_k}."
        if best.best_k
        else "Under this verification cost no source beats plain decoding."
    )
    names = [_short(evaluation.source.name) for evaluation in ordered]
    chart = figure(
        [
            {
                "type": "bar",
                "name": "tokens per unit of cycle cost",
                "x": names,
                "y": [evaluation.speedup_at_reference for evaluation in ordered],
                "marker": {"color": COLORS["accent"]},
                "hovertemplate": "%{y:.2f} tokens per unit of cycle cost at the measured depth<extra></extra>",
            },
            marked(
                "best predicted speedup",
                names,
                [evaluation.best_speedup for evaluation in ordered],
                "%{y:.2f}× at its best k<extra></extra>",
                symbol="diamond",
                size=13,
            ),
        ],
        "",
        # one axis: tokens per unit of the whole cycle's cost is the speedup at the measured depth
        "speedup × (tokens / unit cycle cost)",
        y={"rangemode": "tozero"},
    )
    citations = [
        f"{source.name}: {source.method}. τ = {source.mean_accepted_tokens:g} and speedup {source.measured_speedup:g}× "
        f"from {source.measurement}. Depth: {source.depth_source}."
        for source in draft_sources.DEFAULT_SOURCES
    ]
    part = {
        "rows": rows,
        "summary": summary,
        "uses": "Each source is priced with its own cited p and c, not your calibration: edit its p to use yours.",
        "citations": citations,
        "derivation": " ".join(draft_sources.DERIVATION.split()),
    }
    params: dict[str, Any] = {"k_max": reading.integer("k_max"), **cost_query(reading)}
    if edits:
        params["overrides"] = ",".join(f"{source_id}:{p!r}:{c!r}" for source_id, (p, c) in edits.items())
    return part, chart, link("/api/v1/draft-sources", params)
