"""The parameters of one plan (app.service.plan) for /engine-config, /rules and /dashboard, generated from
their declarations in app.service.plan_inputs.

``PlanQuery`` reads what the decision depends on (engine, drafter, version, acceptance as p, a draft
acceptance rate or a mean acceptance length at k, a measured profile, the schedule's batches, a tree);
``WatchQuery`` adds the watch's window for the rules and the dashboard.  ``built_plan`` builds the plan and
turns what the model refuses into a 422 naming the parameter.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.model.live import engine_config
from app.service import plan, plan_inputs
from app.service.plan_inputs import ACCEPTANCE_RULES, PLAN, PLAN_RULES, PROFILE_RULE, WATCH
from app.service.regimes import BuiltSetup
from app.web.api.inputs import dependency
from app.web.api.params import P
from app.web.core.errors import parameter_error

__all__ = ["ACCEPTANCE_RULES", "PLAN_RULES", "PROFILE_RULE"]


def _given_p(request: Request, p: P = plan_inputs.DEFAULT_P) -> float | None:
    """p as the request gives it, None when left out: its documented default then applies only where neither
    rate nor mean_length gives the acceptance (a p given beside them is refused, naming p)."""
    return p if "p" in request.query_params else None


GivenP = Annotated[float | None, Depends(_given_p)]


PlanQuery = Annotated[plan.PlanRequest, Depends(dependency(PLAN, plan_inputs.request))]
WatchQuery = Annotated[plan.PlanRequest, Depends(dependency((*PLAN, *WATCH), plan_inputs.watch_request))]


def built_plan(request: plan.PlanRequest, built: BuiltSetup) -> plan.Plan:
    """The plan, or a 422 naming the parameter the engine or the model refuses."""
    try:
        return plan.build(request, built)
    except engine_config.ConfigRuleError as error:
        raise parameter_error("draft_path" if request.draft_path else "method", str(error)) from None
    except ValueError as error:
        raise parameter_error("tree_budget", str(error)) from None


def watched_plan(request: plan.PlanRequest, built: BuiltSetup) -> plan.Plan:
    """The plan with its rules made (a 422 naming the parameter when they cannot be)."""
    made = built_plan(request, built)
    made.rules  # noqa: B018 - the rules are made here, so that their refusal (an InputError) is a 422
    return made
