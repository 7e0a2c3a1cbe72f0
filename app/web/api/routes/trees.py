"""Chains against trees for a budget of drafted tokens: GET /trees."""

from __future__ import annotations

from fastapi import APIRouter

from app.model import limits
from app.service import core_inputs, plan_inputs
from app.service import decision_inputs as inputs
from app.service.decision import trees_out
from app.service.decision_inputs import ACCEPTANCE_PATTERN, WIDTHS_PATTERN
from app.service.schemas.decision import TreesOut
from app.web.api.inputs import takes
from app.web.api.setup_params import RULES
from app.web.api.text_params import check_format, chosen_regime, text_parameter
from app.web.core.errors import with_rules
from app.web.core.heavy import HEAVY, in_worker_process

router = APIRouter(prefix="/api/v1", tags=["decision"])

TREES_RULES = RULES + (
    "- `acceptance`: the values do not increase (P_1 >= P_2 >= ...) and sum to at most 1 (rules between the "
    "values of the list)."
)


@router.get(
    "/trees", summary="Chains against trees for a budget of drafted tokens", response_model=TreesOut, dependencies=HEAVY
)
@in_worker_process
@with_rules(TREES_RULES)
@takes(
    inputs.TREE_ACCEPTANCE,
    inputs.TREE_BUDGET,
    core_inputs.C,
    inputs.TREE_REGIME,
    core_inputs.BETA,
    core_inputs.COST_BATCH,
    inputs.TREE_WIDTHS,
)
def get_trees(acceptance: str, budget: int, c: float, regime: str, beta: float, batch: int, widths: str) -> TreesOut:
    """Chain, fixed-width, most-tokens and best-speedup trees for a budget; bounds; speedup with the tree in the cost.

    By default verification is priced by the roofline of the default setup at batch 1 (verification_assumption
    says what is assumed), so verifying a tree grows with its nodes; c is used by the other regimes.
    """
    probabilities = plan_inputs.tree_acceptance(text_parameter("acceptance", acceptance), "acceptance")
    check_format("acceptance", acceptance, ACCEPTANCE_PATTERN, "0.6,0.2,0.1")
    chosen_widths = plan_inputs.tree_widths(text_parameter("widths", widths, limits.MAX_WIDTHS_TEXT))
    check_format("widths", widths, WIDTHS_PATTERN, "2,4")
    chosen = chosen_regime(regime, c, beta, batch)
    return trees_out(probabilities, budget, chosen, chosen_widths)
