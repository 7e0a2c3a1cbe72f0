"""Rules as the plan makes them (app.service.plan): decided once, priced at the k the plan's config runs; and
their recording expressions read back as Python arithmetic, so that a test can hold them to the roofline."""

from __future__ import annotations

import re

from app.model import rules
from app.model.cost.regimes import RooflineSetup
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
        canary=request.canary,
        control=request.control,
    )
    return plan.build(wanted, built).rules


def expression(made: rules.RulesFile, record: str) -> str:
    return next(rule["expr"] for rule in made.document["groups"][0]["rules"] if rule.get("record") == record)


def evaluate(expr: str, values: dict[str, float]) -> float:
    """A piecewise PromQL expression over recorded series, at given values of those series, as Python."""
    text = re.sub(r'\{specdec_rules="[^"]*"\}', "", expr)
    text = text.replace(">= bool", ">=").replace("< bool", "<").replace("== bool", "==")
    for name in sorted(values, key=len, reverse=True):
        text = text.replace(name, repr(values[name]))
    assert "specdec:" not in text, text
    return float(eval(f"({text})", {"__builtins__": {"round": round}}, {}))
