"""Step 3's watch: the Prometheus rules and the Grafana dashboard for the user's setup, shown to copy.

They are the plan's, as GET /api/v1/rules and GET /api/v1/dashboard serve them for the same query: priced at
the k the plan's config runs, alerting below the lower end of the calibrated interval.
"""

from __future__ import annotations

from typing import Any

from app.model import rules
from app.service import plan
from app.service.plan_inputs import engine_title

EXAMPLE_CLASS = "<class>"  # how an alert's text shows the class label's value before Prometheus fills it


def _alert_line(alert: rules.Alert, label: str) -> str:
    """An alert as the page lists it: its name and when it fires (the description's first clause)."""
    description = alert.description.described({"instance": "an instance", label: EXAMPLE_CLASS})
    when = min((description.split(mark, 1)[0] for mark in (": ", ". ")), key=len).rstrip(".")
    return f"{alert.name}: {when[:1].lower()}{when[1:]}."


def watch_part(planned: plan.Plan) -> dict[str, Any]:
    """The plan's rules file and dashboard, or why this engine version cannot be watched."""
    engine = engine_title(planned.request.engine)
    try:
        made = planned.rules
    except rules.RulesError as error:
        return {
            "available": False,
            "unavailable": f"{engine} cannot be watched with these rules: {error.message}.",
            "headline": "",
            "rules_text": "",
            "dashboard_text": "",
            "rules_lines": "",
            "alerts": [],
            "notes": [],
        }
    unchecked = [f"Not checked: {item}" for item in made.unchecked]
    return {
        "available": True,
        "unavailable": "",
        "headline": (
            f"{len(made.records)} recording rules and {len(made.alerts)} alerts for {engine} {made.version.name}: "
            f"{made.window} window, alerts after {made.hold}, acceptance alert below p = {made.p_low:.3f}"
        ),
        "rules_text": made.text,
        "rules_lines": f"{made.text.count(chr(10)):,} lines",
        "dashboard_text": planned.dashboard_text(),
        "alerts": [_alert_line(alert, made.label) for alert in made.alerts],
        "notes": [f"Every series is kept per instance and {made.label}.", *made.notes[1:], *unchecked],
    }
