"""Draft sources side by side: GET /draft-sources."""

from __future__ import annotations

from fastapi import APIRouter

from app.model import limits
from app.model.arithmetic import draft_sources
from app.service import core_inputs
from app.service import decision_inputs as inputs
from app.service.decision import sources_out
from app.service.decision_inputs import OVERRIDES_PATTERN
from app.service.schemas.decision import DraftSourcesOut
from app.web.api.inputs import takes
from app.web.api.setup_params import RULES
from app.web.api.text_params import check_format, chosen_regime, text_parameter
from app.web.core.errors import parameter_error, with_rules

router = APIRouter(prefix="/api/v1", tags=["decision"])

SOURCES_RULES = RULES + "- `overrides` names each source at most once."


@router.get("/draft-sources", summary="Draft sources side by side", response_model=DraftSourcesOut)
@with_rules(SOURCES_RULES)
@takes(inputs.K_MAX, core_inputs.REGIME, core_inputs.BETA, core_inputs.COST_BATCH, inputs.SOURCE_OVERRIDES)
def get_draft_sources(k_max: int, regime: str, beta: float, batch: int, overrides: str) -> DraftSourcesOut:
    """Draft model, n-gram lookup, Medusa and EAGLE side by side: accepted length per unit of draft cost, best k."""
    try:
        edits = draft_sources.parse_overrides(text_parameter("overrides", overrides))
        draft_sources.with_overrides(edits)
    except ValueError as error:
        raise parameter_error("overrides", str(error), overrides) from None
    check_format("overrides", overrides, OVERRIDES_PATTERN, "eagle:0.8:0.1")
    # Each source brings its own c; the regime only prices verification (the roofline's c is not used here).
    chosen = chosen_regime(regime, limits.DEFAULT_C, beta, batch)
    return sources_out(k_max, chosen, edits)
