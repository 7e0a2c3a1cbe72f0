"""Watching a fleet: the Prometheus rules file and the Grafana dashboard for a setup and schedule.

One place builds them for GET /api/v1/rules, GET /api/v1/dashboard and the page /decide, so that the page
shows the file the API serves for the same setup.
"""

from __future__ import annotations

import json
from typing import Any

from app.model import dashboard, rules
from app.web.services.regimes import BuiltSetup, devices_for_batch, devices_note


def watch_rules(built: BuiltSetup, request: rules.RulesRequest, fit_batch: int = 1) -> rules.RulesFile:
    """The rules for this setup (with devices=0, the fewest devices that hold fit_batch sequences).

    Raises rules.RulesError naming the parameter when the engine version, durations or matchers are refused.
    """
    built = devices_for_batch(built, fit_batch)
    return rules.build(request, built.setup, devices_note(built))


def dashboard_document(made: rules.RulesFile) -> dict[str, Any]:
    """The Grafana dashboard over these rules, as the JSON object Grafana imports."""
    return dashboard.build(made)


def dashboard_text(made: rules.RulesFile) -> str:
    """The dashboard as a file a user pastes into Grafana's import box."""
    return json.dumps(dashboard_document(made), indent=2, ensure_ascii=False) + "\n"
