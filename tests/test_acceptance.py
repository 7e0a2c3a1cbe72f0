"""Tokens per verification from a measured profile: exact at the measured k, a stated model beyond."""

from __future__ import annotations

import pytest

from app.model.arithmetic import closed_form
from app.model.arithmetic.acceptance import AcceptanceProfile, expected_tokens


def test_without_a_profile_it_is_the_closed_form() -> None:
    assert expected_tokens(0.8, 5) == closed_form.expected_tokens(0.8, 5)
    assert AcceptanceProfile.of(0.8).expected_tokens(5) == closed_form.expected_tokens(0.8, 5)


def test_at_measured_k_it_is_one_plus_the_shares_whatever_the_process() -> None:
    profile = AcceptanceProfile.of(0.5, (0.9, 0.6, 0.55))
    assert profile.expected_tokens(2) == pytest.approx(2.5)
    assert profile.expected_tokens(3) == pytest.approx(3.05)


def test_beyond_it_continues_at_the_last_conditional_acceptance() -> None:
    profile = AcceptanceProfile.of(0.5, (0.9, 0.6))
    q = 0.6 / 0.9
    assert profile.tail == pytest.approx(q)
    assert profile.expected_tokens(4) == pytest.approx(1 + 0.9 + 0.6 + 0.6 * (q + q * q))
    iid_shares = tuple(0.7**i for i in range(1, 4))
    assert AcceptanceProfile.of(0.7, iid_shares).expected_tokens(9) == pytest.approx(
        closed_form.expected_tokens(0.7, 9)
    )


@pytest.mark.parametrize("shares", [(0.5, 0.9), (1.2,), (-0.1,)])
def test_impossible_profiles_are_refused(shares: tuple[float, ...]) -> None:
    with pytest.raises(ValueError):
        AcceptanceProfile.of(0.5, shares)
