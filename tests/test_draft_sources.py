"""Draft sources side by side: cited measurements, derived parameters, overrides."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.model.arithmetic import closed_form, draft_sources
from app.model.cost.regimes import compute_bound_verification, linear_verification


def test_the_sources_cover_every_kind_the_issue_names() -> None:
    kinds = {source.kind for source in draft_sources.DEFAULT_SOURCES}
    assert kinds == {"draft_model", "ngram", "heads", "feature"}
    assert len(set(draft_sources.SOURCE_IDS)) == len(draft_sources.SOURCE_IDS)


@pytest.mark.parametrize("source", draft_sources.DEFAULT_SOURCES, ids=lambda source: source.id)
def test_every_number_carries_its_citation(source: draft_sources.DraftSource) -> None:
    assert "arXiv:2401.07851" in source.measurement
    assert "arXiv:" in source.method or "github.com/" in source.method
    assert source.depth_source
    assert 1.0 < source.mean_accepted_tokens <= source.reference_depth + 1
    assert source.measured_speedup > 1.0


@pytest.mark.parametrize("source", draft_sources.DEFAULT_SOURCES, ids=lambda source: source.id)
def test_derived_parameters_reproduce_the_measurement(source: draft_sources.DraftSource) -> None:
    """At its measured depth and with one pass per verification, each source gives back tau and S."""
    depth = source.reference_depth
    assert closed_form.expected_tokens(source.acceptance, depth) == pytest.approx(source.mean_accepted_tokens, rel=1e-9)
    assert closed_form.speedup(source.acceptance, depth, source.draft_cost) == pytest.approx(
        source.measured_speedup, rel=1e-9
    )


def test_accepted_length_per_unit_of_draft_cost() -> None:
    evaluations = {evaluation.source.id: evaluation for evaluation in draft_sources.compare_sources(16)}
    for evaluation in evaluations.values():
        source = evaluation.source
        tau, speedup = source.mean_accepted_tokens, source.measured_speedup
        assert evaluation.accepted_per_draft_cost == pytest.approx((tau - 1) / (tau / speedup - 1), rel=1e-9)
    # Prompt lookup runs no model: least accepted, but the most accepted per unit of draft cost.
    best_per_cost = max(evaluations.values(), key=lambda evaluation: evaluation.accepted_per_draft_cost or 0.0)
    assert best_per_cost.source.id == "ngram"
    assert evaluations["ngram"].expected_tokens_at_reference < evaluations["eagle"].expected_tokens_at_reference


def test_free_drafting_has_no_finite_ratio() -> None:
    assert draft_sources.accepted_per_draft_cost(0.5, 4, 0.0) is None
    assert draft_sources.accepted_per_draft_cost(0.5, 0, 0.1) is None
    assert draft_sources.accepted_per_draft_cost(0.5, 1, 0.25) == pytest.approx(0.5 / 0.25)


def test_comparison_is_sorted_and_matches_the_closed_form() -> None:
    verify = linear_verification(0.1)
    evaluations = draft_sources.compare_sources(12, verify)
    speedups = [evaluation.best_speedup for evaluation in evaluations]
    assert speedups == sorted(speedups, reverse=True)
    for evaluation in evaluations:
        source = evaluation.source
        assert (evaluation.best_k, evaluation.best_speedup) == pytest.approx(
            closed_form.best_k(source.acceptance, source.draft_cost, 12, verify)
        )
        assert len(evaluation.speedups) == 13


def test_compute_bound_verification_never_helps() -> None:
    free = {evaluation.source.id: evaluation.best_speedup for evaluation in draft_sources.compare_sources(16)}
    bound = {
        evaluation.source.id: evaluation.best_speedup
        for evaluation in draft_sources.compare_sources(16, compute_bound_verification)
    }
    for source_id, speedup in bound.items():
        assert speedup <= free[source_id]
        assert speedup == 1.0  # every verified token costs a pass: no draft pays


@given(st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=10.0))
def test_overrides_replace_p_and_c(p: float, c: float) -> None:
    sources = draft_sources.with_overrides({"eagle": (p, c)})
    edited = next(source for source in sources if source.id == "eagle")
    assert (edited.acceptance, edited.draft_cost, edited.edited) == (p, c, True)
    untouched = [source for source in sources if source.id != "eagle"]
    assert all(not source.edited for source in untouched)


def test_parse_overrides() -> None:
    assert draft_sources.parse_overrides("eagle:0.8:0.1, ngram:0.5:0") == {"eagle": (0.8, 0.1), "ngram": (0.5, 0.0)}
    assert draft_sources.parse_overrides("") == {}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("eagle:0.8", "id:acceptance:draft_cost"),
        ("eagle:x:0.1", "must be numbers"),
        ("eagle:0.8:0.1,eagle:0.7:0.1", "twice"),
    ],
)
def test_bad_override_text(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        draft_sources.parse_overrides(text)


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"gpt5": (0.5, 0.1)}, "unknown draft source gpt5"),
        ({"eagle": (1.5, 0.1)}, "acceptance of eagle"),
        ({"eagle": (0.5, -1.0)}, "draft cost of eagle"),
        ({"eagle": (float("nan"), 0.1)}, "acceptance of eagle"),
    ],
)
def test_bad_overrides(overrides: dict[str, tuple[float, float]], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        draft_sources.with_overrides(overrides)
