"""Calibration: serving metrics back to p, and clear errors for expositions that cannot be used."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.model.arithmetic import closed_form
from app.model.cost.regimes import linear_verification
from app.model.counters import calibration
from app.model.counters.calibration import CalibrationError
from app.model.counters.counts import Measurement

PROBABILITY = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
DRAFT_LENGTH = st.integers(min_value=1, max_value=24)


# ---------------------------------------------------------------------------
# (a) and (b): round trips with the closed form


@given(PROBABILITY, DRAFT_LENGTH)
def test_rate_round_trip(p: float, k: int) -> None:
    rate = closed_form.draft_acceptance_rate(p, k)
    result = calibration.calibrate_from_rate(rate, k, c=0.1, k_max=16)
    assert result.acceptance == pytest.approx(p, abs=1e-9)
    assert result.mean_acceptance_length == pytest.approx(closed_form.expected_tokens(p, k), rel=1e-9)


@given(PROBABILITY, DRAFT_LENGTH)
def test_length_round_trip(p: float, k: int) -> None:
    length = closed_form.expected_tokens(p, k)
    result = calibration.calibrate_from_length(length, k, c=0.1, k_max=16)
    assert result.acceptance == pytest.approx(p, abs=1e-9)
    assert result.draft_acceptance_rate == pytest.approx(closed_form.draft_acceptance_rate(p, k), abs=1e-9)


@given(st.floats(min_value=0.0, max_value=1.0), DRAFT_LENGTH)
def test_rate_and_length_carry_the_same_information(rate: float, k: int) -> None:
    from_rate = calibration.calibrate_from_rate(rate, k, c=0.0, k_max=8)
    from_length = calibration.calibrate_from_length(1.0 + rate * k, k, c=0.0, k_max=8)
    assert from_rate.acceptance == pytest.approx(from_length.acceptance, abs=1e-9)


def test_rate_is_not_p() -> None:
    result = calibration.calibrate_from_rate(0.5, 5, c=0.05, k_max=10)
    assert result.acceptance > 0.6  # drafts after the first rejection count as failures
    assert "is not p" in result.notes[0]


@given(PROBABILITY, DRAFT_LENGTH, st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=1.0))
def test_predictions_follow_the_closed_form(p: float, k: int, c: float, beta: float) -> None:
    verify = linear_verification(beta)
    result = calibration.calibrate_from_length(closed_form.expected_tokens(p, k), k, c=c, k_max=12, verify=verify)
    assert [row.k for row in result.predictions] == list(range(13))
    assert result.predictions[0].speedup == 1.0
    chosen, speed = closed_form.best_k(result.acceptance, c, 12, verify)
    assert (result.best_k, result.best_speedup) == (chosen, pytest.approx(speed))
    for row in result.predictions:
        assert row.speedup == pytest.approx(closed_form.speedup(result.acceptance, row.k, c, verify))


def test_reference_values() -> None:
    result = calibration.calibrate_from_length(3.69, 5, c=0.0, k_max=10)
    assert result.acceptance == pytest.approx(0.8, abs=1e-3)


@pytest.mark.parametrize(
    ("function", "value", "k"),
    [
        (calibration.calibrate_from_rate, 1.5, 4),
        (calibration.calibrate_from_rate, 0.5, 0),
        (calibration.calibrate_from_length, 0.5, 4),
        (calibration.calibrate_from_length, 6.5, 4),
    ],
)
def test_out_of_range_measurements_are_refused(function: object, value: float, k: int) -> None:
    with pytest.raises(ValueError):
        function(value, k, c=0.1, k_max=8)  # type: ignore[operator]


COUNT = st.floats(min_value=0.0, max_value=calibration.MAX_COUNTER)


@settings(max_examples=300, deadline=None)
@given(COUNT, COUNT, COUNT, st.lists(COUNT, max_size=8), st.none() | st.integers(min_value=1, max_value=8))
def test_any_counters_give_finite_numbers_or_a_calibration_error(
    drafts: float, draft_tokens: float, accepted: float, positions: list[float], k: int | None
) -> None:
    counters = Measurement("vllm", "counters", None, drafts, draft_tokens, accepted, tuple(positions))
    try:
        result = calibration.calibrate_from_counters(counters, c=0.1, k_max=8, k=k)
    except CalibrationError:
        return
    numbers = [result.acceptance, result.mean_acceptance_length, result.draft_acceptance_rate, result.best_speedup]
    numbers += [row.speedup for row in result.predictions]
    numbers += [row.rate for row in result.positions]
    if result.departure is not None:
        numbers += [result.departure.max_conditional_deviation, result.departure.max_rate_deviation]
        numbers += [value for value in (result.departure.chi_square, result.departure.p_value) if value is not None]
    assert all(math.isfinite(value) for value in numbers)
    assert 0.0 <= result.acceptance <= 1.0
