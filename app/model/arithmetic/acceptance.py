"""Tokens per verification from a measured acceptance profile, with the i.i.d. model where nothing was measured.

An engine's per-position counters give, for each draft position i, the share of verifications that accepted
at least i tokens: pi_1 >= pi_2 >= ... >= pi_m.  Whatever the acceptance process (i.i.d. or bursty), the
tokens of a cycle at draft length k <= m are exactly

    E(k) = 1 + pi_1 + ... + pi_k,

so a decision at a measured k needs no model at all.  Beyond the last measured position m, a stated model
carries the profile on: each further position is accepted with the conditional acceptance measured at the
last position, q = pi_m / pi_(m-1) (the i.i.d. p when fewer than two positions were measured), so that

    E(k) = E(m) + pi_m (q + q^2 + ... + q^(k-m)).

The i.i.d. p (Leviathan's alpha) is the model for where nothing was measured: E(k) = (1 - p^(k+1)) / (1 - p).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from app.model.arithmetic import closed_form


@dataclass(frozen=True)
class AcceptanceProfile:
    """The i.i.d. p, and the measured shares pi_1..pi_m where a profile was measured."""

    p: float
    measured: tuple[float, ...] = ()

    @classmethod
    def of(cls, p: float, measured: Sequence[float] = ()) -> AcceptanceProfile:
        shares = tuple(float(value) for value in measured)
        if any(not 0.0 <= value <= 1.0 for value in shares):
            raise ValueError("each share of drafts accepted to a position is from 0 to 1")
        if any(later > earlier + 1e-12 for earlier, later in itertools.pairwise(shares)):
            raise ValueError("shares accepted to each position cannot grow with the position")
        return cls(p, shares)

    @property
    def tail(self) -> float:
        """The conditional acceptance that carries the profile beyond its last measured position."""
        m = self.measured
        if len(m) >= 2 and m[-2] > 0:
            return min(max(m[-1] / m[-2], 0.0), 1.0)
        return self.p

    def expected_tokens(self, k: int) -> float:
        if not self.measured:
            return closed_form.expected_tokens(self.p, k)
        m = len(self.measured)
        if k <= m:
            return 1.0 + sum(self.measured[:k])
        q = self.tail
        extra = k - m
        geometric = float(extra) if q >= 1.0 else q * (1.0 - q**extra) / (1.0 - q)
        return 1.0 + sum(self.measured) + self.measured[-1] * geometric

    def describe(self) -> str:
        if not self.measured:
            return f"the i.i.d. model at p = {self.p:.3f} (no profile measured)"
        return (
            f"the measured profile up to k = {len(self.measured)}, beyond it the last measured conditional "
            f"acceptance {self.tail:.3f} per position"
        )


Acceptance = float | AcceptanceProfile


def expected_tokens(acceptance: Acceptance, k: int) -> float:
    """E[T] at draft length k from a profile, or from the i.i.d. p."""
    if isinstance(acceptance, AcceptanceProfile):
        return acceptance.expected_tokens(k)
    return closed_form.expected_tokens(acceptance, k)


def iid_p(acceptance: Acceptance) -> float:
    return acceptance.p if isinstance(acceptance, AcceptanceProfile) else acceptance
