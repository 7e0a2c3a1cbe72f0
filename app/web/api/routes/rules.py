"""Watching a fleet with Prometheus: the rules file and the Grafana dashboard for a setup and schedule."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from app.service import plan_inputs
from app.service.schemas.rules import RulesOut
from app.web.api.inputs import takes
from app.web.api.plan_params import PLAN_RULES, WatchQuery, watched_plan
from app.web.api.setup_params import RULES, SETUP_RULES, Setup
from app.web.core.errors import parameter_error, with_rules

router = APIRouter(prefix="/api/v1", tags=["rules"])

RULES_RULES = (
    RULES
    + PLAN_RULES
    + (
        "- `engine_version` also exports spec-decode series to Prometheus (a version without them gets a 422 "
        "naming what is missing);\n"
        "- `p_low` is at most `p`;\n"
        "- `window` is from 1s to 7d and `hold` at most 7d, each a Prometheus duration (largest unit first: 1h30m);\n"
        "- `label` is a label name that does not start with __;\n"
        '- `match` is label matchers separated by commas (name="value", name=~"regex", != and !~);\n'
        "- `canary`, `control`: both or neither, each label matchers, not the same (the canary's speedup over "
        "control and its roll-back alert);\n"
        "- `devices`: both models and one sequence fit in the devices' memory.\n"
    )
    + SETUP_RULES
)


YAML_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {
            "application/yaml": {
                "schema": {
                    "type": "object",
                    "description": "A Prometheus rules file: rule groups, for rule_files.",
                    "required": ["groups"],
                    "properties": {"groups": {"type": "array", "items": {"type": "object"}}},
                }
            }
        },
        "description": "JSON, or the rules file itself with format=yaml.",
    },
    422: {"description": "An unknown engine or version, a version without spec-decode series, bad durations."},
}


@router.get("/rules", response_model=RulesOut, responses=YAML_RESPONSE)
@with_rules(RULES_RULES)
@takes(plan_inputs.RULES_FORMAT)
def get_rules(built: Setup, request: WatchQuery, format: str) -> RulesOut | Response:
    """Prometheus recording and alerting rules for this engine version, setup and schedule, per instance and class."""
    if format not in plan_inputs.RULES_FORMATS:
        raise parameter_error("format", f"must be json or yaml; got {format!r}", format)
    planned = watched_plan(request, built)
    made = planned.rules
    if format == "yaml":
        return Response(
            made.text,
            media_type="application/yaml; charset=utf-8",
            headers={"content-disposition": f'attachment; filename="specdec-{made.engine}.rules.yml"'},
        )
    return planned.rules_out()


@router.get(
    "/dashboard",
    response_model=dict[str, Any],
    responses={200: {"description": "A Grafana dashboard (classic JSON model) over the recording rules."}},
)
@with_rules(RULES_RULES)
def get_dashboard(built: Setup, request: WatchQuery) -> JSONResponse:
    """A Grafana dashboard over the rules of the same parameters: tokens against break-even, speedup, acceptance."""
    return JSONResponse(watched_plan(request, built).dashboard)
