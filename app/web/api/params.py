"""Query parameter types shared by the API families, generated from their declarations in app.service.core_inputs."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from app.model.arithmetic import bursty
from app.service import core_inputs
from app.web.api.inputs import dependency, query
from app.web.api.setup_params import RULES
from app.web.core.errors import parameter_error

P = Annotated[float, query(core_inputs.P)]
# The cost of a cycle (c, regime, beta, batch), as the calibration endpoints take it.
Cost = Annotated[core_inputs.CostChoice, Depends(dependency(core_inputs.COST, core_inputs.cost_choice))]


RHO_RULES = RULES + (
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
