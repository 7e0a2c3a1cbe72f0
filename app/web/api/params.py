"""Query parameter types shared by the API families: bounds live here once."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from app.model import bursty
from app.model.limits import K_MAX_LIMIT, MAX_CYCLES, MAX_DRAFT_COST, MAX_SEED, MAX_TOKENS
from app.web.core.errors import parameter_error

__all__ = ["K_MAX_LIMIT", "MAX_CYCLES", "MAX_SEED", "MAX_TOKENS"]


def probability(description: str) -> object:
    return Query(ge=0.0, le=1.0, allow_inf_nan=False, description=description)


P = Annotated[float, probability("Per-token acceptance probability p (Leviathan's alpha), 0 to 1.")]
K = Annotated[int, Query(ge=0, le=K_MAX_LIMIT, description=f"Draft length k, 0 (plain decoding) to {K_MAX_LIMIT}.")]
C = Annotated[
    float,
    Query(
        ge=0.0,
        le=MAX_DRAFT_COST,
        allow_inf_nan=False,
        description=f"Cost of one draft step relative to one target pass, 0 to {MAX_DRAFT_COST:g}.",
    ),
]
KMax = Annotated[int, Query(ge=1, le=K_MAX_LIMIT, description=f"Largest draft length searched, 1 to {K_MAX_LIMIT}.")]
Seed = Annotated[int, Query(ge=0, le=MAX_SEED, description=f"Random seed, 0 to {MAX_SEED}; same seed, same result.")]

Rho = Annotated[
    float,
    Query(
        ge=-1.0,
        le=1.0,
        allow_inf_nan=False,
        description=(
            "Lag-1 correlation of acceptances (two-state Markov chain over verified drafts, carried across cycles), "
            "from -min(p, 1-p)/max(p, 1-p) to 1; 0 is i.i.d."
        ),
    ),
]


RHO_RULES = (
    "\n\nRules between parameters (a 422 names the parameter):\n\n"
    "- `rho` lies from -min(p, 1-p)/max(p, 1-p) to 1 at the given p, so that both transition probabilities of "
    "the chain lie in [0, 1]."
)


def check_rho(p: float, rho: float) -> None:
    """422 naming rho and its bounds at this p when rho leaves the range the chain allows."""
    low, high = bursty.rho_bounds(p)
    if not low - 1e-12 <= rho <= high:
        raise parameter_error(
            "rho",
            f"must be from {low:.6g} to {high:g} at p = {p:g} (both transition probabilities in [0, 1]); got {rho:g}",
            rho,
        )
