"""Step 3's watch: the Prometheus rules and the Grafana dashboard for the user's setup, shown to copy.

They are the files GET /api/v1/rules and GET /api/v1/dashboard serve for the same query: this setup and
schedule at the calibrated p, alerting below the lower end of its interval.
"""

from __future__ import annotations

from typing import Any

from app.model import rules
from app.web.pages.controls import Reading, url_text
from app.web.pages.views.decide.controls import ENGINE_LABELS
from app.web.services.regimes import BuiltSetup
from app.web.services.watch import dashboard_text, watch_rules

EXAMPLE_CLASS = "<class>"  # how an alert's text shows the class label's value before Prometheus fills it


def watch_request(reading: Reading, p: float, p_low: float | None) -> rules.RulesRequest:
    """The rules request of this page: its engine, drafter, version, schedule and batch, at the calibrated p."""
    return rules.RulesRequest(
        engine=reading.text("engine"),
        version=reading.text("engine_version").strip() or None,
        p=p,
        p_low=p_low if p_low is not None and p_low <= p else None,
        k_max=reading.integer("k_max"),
        batch=reading.integer("batch"),
        method=reading.text("method").strip() or None,
    )


def api_query(request: rules.RulesRequest, setup_query: str) -> str:
    """The same request as API parameters."""
    query = f"engine={request.engine}&p={request.p!r}&k_max={request.k_max}{setup_query}"
    if request.p_low is not None:
        query += f"&p_low={request.p_low!r}"
    if request.batch != 1:
        query += f"&batch={request.batch}"
    for name, value in (("method", request.method), ("engine_version", request.version)):
        if value:
            query += f"&{name}={url_text(value)}"
    return query


def _alert_line(alert: rules.Alert, label: str) -> str:
    """An alert as the page lists it: its name and when it fires (the description's first clause)."""
    description = alert.description.described({"instance": "an instance", label: EXAMPLE_CLASS})
    when = min((description.split(mark, 1)[0] for mark in (": ", ". ")), key=len).rstrip(".")
    return f"{alert.name}: {when[:1].lower()}{when[1:]}."


def watch_part(request: rules.RulesRequest, built: BuiltSetup) -> dict[str, Any]:
    """The rules file and dashboard for this setup, or why this engine version cannot be watched."""
    engine = ENGINE_LABELS[request.engine]
    try:
        made = watch_rules(built, request)
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
        "dashboard_text": dashboard_text(made),
        "alerts": [_alert_line(alert, made.label) for alert in made.alerts],
        "notes": [f"Every series is kept per instance and {made.label}.", *made.notes[1:], *unchecked],
    }
