"""Rules as the plan makes them (app.service.plan): decided once, priced at the k the plan's config runs."""

from __future__ import annotations

from app.model import rules
from app.model.regimes import RooflineSetup
from app.service import plan
from app.service.regimes import BuiltSetup, SetupRequest, describe_setup


def planned_rules(
    request: rules.RulesRequest, setup: RooflineSetup, profile: tuple[float, ...] = ()
) -> rules.RulesFile:
    """The rules file of the plan for this request on this setup (its devices as given)."""
    rules.check(request)
    built = BuiltSetup(setup, describe_setup(setup, SetupRequest(), devices_auto=False))
    wanted = plan.PlanRequest(
        engine=request.engine,
        p=request.p,
        profile=profile,
        k_max=request.k_max,
        batch_max=request.batch_max,
        batch=request.batch,
        method=request.method,
        version=request.version,
        p_low=request.p_low,
        label=request.label,
        window=request.window,
        hold=request.hold,
        match=request.match,
    )
    return plan.build(wanted, built).rules
