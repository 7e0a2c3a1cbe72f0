"""The step-time terms: recovered from steps that follow them, and kept at 0 (named) where they cannot be seen."""

from __future__ import annotations

import re

import pytest

from app.model.cost.step_cost import TERM_LABELS, TERMS, StepCostError, StepPoint, fit, given_terms, terms_text

FIXED, PER_SEQUENCE, PER_TOKEN, PER_DRAFT_STEP = 20.0, 3.0, 1.5, 0.8


def _ms(batch: float, tokens: float, draft: bool) -> float:
    extra = tokens - 1
    return FIXED + PER_SEQUENCE * batch + PER_TOKEN * batch * extra + (PER_DRAFT_STEP * extra if draft else 0.0)


def _points(batches: list[int], tokens: list[float], draft: bool) -> list[StepPoint]:
    return [StepPoint(batch, n, _ms(batch, n, draft)) for batch in batches for n in tokens]


def test_steps_that_follow_the_terms_give_them_back() -> None:
    cost = fit(_points([1, 2, 4, 8], [1.0, 3.5, 6.2], draft=True), draft_model=True)
    assert [cost.fixed_ms, cost.per_sequence_ms] == pytest.approx([FIXED, PER_SEQUENCE])
    assert cost.per_extra_token_ms == pytest.approx(PER_TOKEN)
    assert cost.per_draft_step_ms == pytest.approx(PER_DRAFT_STEP)
    assert cost.kept == {} and cost.rms_relative_error == pytest.approx(0.0, abs=1e-9)
    assert float(cost.step_ms(16, 2.0)) == pytest.approx(_ms(16, 2.0, True))
    # a step yielding 2.5 tokens per sequence for 3.5 verified: 2.5 t(B, 1) / t(B, 3.5)
    assert float(cost.speedup(4, 2.5, 3.5)) == pytest.approx(2.5 * _ms(4, 1, True) / _ms(4, 3.5, True))


def test_without_a_draft_model_the_draft_step_term_is_zero_and_said_so() -> None:
    cost = fit(_points([1, 2, 4], [1.0, 5.0], draft=False), draft_model=False)
    assert cost.per_draft_step_ms == 0.0 and "per_draft_step_ms" in cost.kept
    assert cost.per_extra_token_ms == pytest.approx(PER_TOKEN)


def test_one_batch_size_keeps_the_per_sequence_term_and_says_which() -> None:
    cost = fit(_points([4], [1.0, 3.0, 5.0], draft=False), draft_model=False)
    assert cost.per_sequence_ms == 0.0
    assert "one batch size (4)" in cost.kept["per_sequence_ms"]
    assert float(cost.step_ms(4, 3.0)) == pytest.approx(_ms(4, 3.0, False))  # carried by the fixed time


def test_plain_steps_only_keep_the_token_terms() -> None:
    cost = fit(_points([1, 2, 4], [1.0], draft=False), draft_model=True)
    assert cost.kept["per_extra_token_ms"] == "no step verified a draft"
    assert cost.per_extra_token_ms == cost.per_draft_step_ms == 0.0


def test_a_term_is_never_negative() -> None:
    # times that fall with the batch would need a negative per-sequence time
    points = [StepPoint(1, 1, 10.0), StepPoint(2, 1, 9.0), StepPoint(4, 1, 8.0)]
    cost = fit(points, draft_model=False)
    assert min(cost.fixed_ms, cost.per_sequence_ms, cost.per_extra_token_ms) >= 0.0


@pytest.mark.parametrize(
    "points",
    [[], [StepPoint(1, 1, 0.0)], [StepPoint(0, 1, 1.0)], [StepPoint(1, 0.5, 1.0)], [StepPoint(1, 1, float("nan"))]],
)
def test_steps_that_cannot_be_fitted_are_refused(points: list[StepPoint]) -> None:
    with pytest.raises(StepCostError):
        fit(points, draft_model=False)


def test_a_one_token_pass_cheaper_than_the_line_is_the_multi_token_term() -> None:
    jump = 6.0  # a pass over several tokens starts matrix kernels: it costs this much more once
    points = [
        StepPoint(batch, n, _ms(batch, n, False) + (jump if batch * n > 1 else 0.0))
        for batch in (1, 2, 4, 8)
        for n in (1.0, 4.0)
    ]
    cost = fit(points, draft_model=False)
    assert cost.multi_token_ms == pytest.approx(jump) and cost.fixed_ms == pytest.approx(FIXED)
    assert "multi_token_ms" in cost.fitted
    without_batch_one_plain = fit([point for point in points if point.batch * point.tokens > 1], draft_model=False)
    assert without_batch_one_plain.multi_token_ms == 0.0
    assert "no one-token pass" in without_batch_one_plain.kept["multi_token_ms"]
    assert without_batch_one_plain.fixed_ms == pytest.approx(FIXED + jump)  # carried by the fixed time


def test_a_draft_step_over_several_sequences_costing_more_is_its_own_term() -> None:
    """llama.cpp drafts every slot's next token in one draft pass: over one sequence it is a one-token pass of the
    draft (vector kernels), over several a matrix pass that costs more per draft step."""
    jump = 0.6
    points = [
        StepPoint(batch, n, _ms(batch, n, True) + (jump * (n - 1) if batch > 1 else 0.0))
        for batch in (1, 2, 4, 8)
        for n in (1.0, 3.0, 5.0)
    ]
    cost = fit(points, draft_model=True)
    assert cost.draft_multi_sequence_ms == pytest.approx(jump) and "draft_multi_sequence_ms" in cost.fitted
    assert cost.per_draft_step_ms == pytest.approx(PER_DRAFT_STEP) and cost.kept == {}
    assert float(cost.step_ms(1, 5.0)) == pytest.approx(_ms(1, 5.0, True))
    assert float(cost.step_ms(16, 5.0)) == pytest.approx(_ms(16, 5.0, True) + 4 * jump)
    without_drafts_at_one = fit([point for point in points if point.batch > 1 or point.tokens == 1], True)
    assert without_drafts_at_one.draft_multi_sequence_ms == 0.0
    assert "no drafted step at batch 1" in without_drafts_at_one.kept["draft_multi_sequence_ms"]
    assert "draft_multi_sequence_ms" in fit(points, draft_model=False).kept  # a lookup drafts without passes


def test_a_term_the_steps_cannot_tell_from_another_is_kept_and_named() -> None:
    two_steps = fit([StepPoint(1, 1.0, 10.0), StepPoint(4, 3.0, 30.0)], draft_model=False)
    assert len(two_steps.fitted) <= 2
    assert any("2 measured steps identify no more than 2 terms" in why for why in two_steps.kept.values())
    assert two_steps.rms_relative_error == pytest.approx(0.0, abs=1e-9)


def test_a_term_these_steps_cannot_identify_is_held_at_its_given_value() -> None:
    jump = 6.0
    points = [
        StepPoint(batch, n, _ms(batch, n, True) + (jump if batch * n > 1 else 0.0))
        for batch in (1, 2, 4, 8)
        for n in (1.0, 4.0)
    ]
    without_one_token = [point for point in points if point.batch * point.tokens > 1]
    held = fit(without_one_token, draft_model=True, given={"multi_token_ms": jump, "fixed_ms": 1.0})
    assert held.multi_token_ms == jump and "no one-token pass" in held.given["multi_token_ms"]
    assert "multi_token_ms" not in held.kept and "multi_token_ms" not in held.fitted
    assert held.fixed_ms == pytest.approx(FIXED)  # fitted around the given term; its own given 1.0 is not used
    assert float(held.step_ms(1, 1.0)) == pytest.approx(_ms(1, 1.0, True))  # the one-token pass it never saw
    assert fit(points, draft_model=True, given={"multi_token_ms": 99.0}).multi_token_ms == pytest.approx(jump)
    lookup = fit(without_one_token, draft_model=False, given={"per_draft_step_ms": 5.0})
    assert lookup.per_draft_step_ms == 0.0 and lookup.given == {}  # a lookup runs no draft passes
    for bad in ({"fixed": 1.0}, {"fixed_ms": -1.0}, {"fixed_ms": float("nan")}):
        with pytest.raises(StepCostError, match="a given term"):
            fit(points, draft_model=True, given=bad)


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        ({"fixed": 1.0}, "fixed: not a step-cost term with a number"),
        ({"fixed_ms": "3"}, "fixed_ms: not a step-cost term with a number"),
        ({"fixed_ms": True}, "fixed_ms: not a step-cost term with a number"),
        ({"fixed_ms": -1.0}, "fixed_ms must be a finite number of ms, 0 or above; got -1.0"),
        ({"fixed_ms": float("inf")}, "fixed_ms must be a finite number of ms, 0 or above; got inf"),
    ],
)
def test_given_terms_are_checked_once_for_every_caller(terms: dict[str, object], message: str) -> None:
    with pytest.raises(StepCostError, match=re.escape(message)):
        given_terms(terms)


def test_given_terms_keep_usable_values_as_floats() -> None:
    assert given_terms({"fixed_ms": 3, "multi_token_ms": 0.5}) == {"fixed_ms": 3.0, "multi_token_ms": 0.5}


def test_terms_text_names_each_shown_term_once_in_the_model_order() -> None:
    values = dict.fromkeys(TERMS, 0.0) | {"fixed_ms": 44.654, "per_extra_token_ms": 9.9}
    text = terms_text(values, ["per_extra_token_ms", "fixed_ms"])
    assert text == (f"44.65 ms ({TERM_LABELS['fixed_ms']}) + 9.90 ms ({TERM_LABELS['per_extra_token_ms']})")
    every = terms_text(values, digits=3)
    assert every.count(" ms (") == len(TERMS) and every.startswith("44.654 ms")
