"""A Grafana dashboard over the recording rules of :mod:`app.model.rules`, as the JSON Grafana imports.

It follows Grafana's classic dashboard JSON model (grafana.com/docs/grafana/latest/dashboards/json-model):
the dashboard's ``uid``, ``title``, ``tags``, ``timezone``, ``editable``, ``graphTooltip``, ``time``,
``timepicker``, ``templating``, ``annotations``, ``refresh``, ``schemaVersion``, ``version`` and ``links``,
and panels with ``id``, ``type``, ``title``, ``gridPos`` (x, y, w, h on a 24-column grid), ``datasource``,
``targets`` (``refId``, ``expr``, ``legendFormat``), ``fieldConfig`` and ``options``.  The data source is a
variable of type ``datasource``, so that the dashboard imports into any Grafana with a Prometheus.

Panels: tokens per verification against the break-even per class; the implied speedup (1 marked);
acceptance per position with p and its calibrated lower bound; the running batch against the schedule's k
and the k the engine runs; and a text panel with the setup, the schedule and what the rules cannot check.
"""

from __future__ import annotations

import hashlib
from typing import Any

from app.model import rules
from app.model.engines.base import runs_of
from app.model.rules import RulesFile

SCHEMA_VERSION = 39
GRID_COLUMNS = 24
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def _selector(made: RulesFile) -> str:
    own = f'{rules.RULES_LABEL}="{made.rules_id}"'
    if made.label == "instance":
        return f'{{{own}, instance=~"$instance"}}'
    return f'{{{own}, instance=~"$instance", {made.label}=~"$class"}}'


def _legend(made: RulesFile, suffix: str) -> str:
    who = "{{instance}}" if made.label == "instance" else f"{{{{instance}}}} {{{{{made.label}}}}}"
    return f"{who} {suffix}".strip()


def _target(ref: str, expr: str, legend: str) -> dict[str, Any]:
    return {"refId": ref, "datasource": DATASOURCE, "expr": expr, "legendFormat": legend, "range": True}


def _thresholds(steps: list[tuple[str, float | None]]) -> dict[str, Any]:
    return {"mode": "absolute", "steps": [{"color": color, "value": value} for color, value in steps]}


def _timeseries(
    panel_id: int,
    title: str,
    description: str,
    grid: tuple[int, int, int, int],
    targets: list[dict[str, Any]],
    *,
    unit: str = "none",
    minimum: float | None = 0.0,
    thresholds: list[tuple[str, float | None]] | None = None,
    overrides: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    x, y, w, h = grid
    custom: dict[str, Any] = {"drawStyle": "line", "lineWidth": 2, "fillOpacity": 0, "showPoints": "never"}
    if thresholds:
        custom["thresholdsStyle"] = {"mode": "line"}
    defaults: dict[str, Any] = {
        "unit": unit,
        "custom": custom,
        "thresholds": _thresholds(thresholds or [("green", None)]),
        "color": {"mode": "palette-classic"},
    }
    if minimum is not None:
        defaults["min"] = minimum
    return {
        "id": panel_id,
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "targets": targets,
        "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
        "options": {
            "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
            "tooltip": {"mode": "multi", "sort": "none"},
        },
    }


def _about(made: RulesFile) -> str:
    decision = made.decision
    lines = [
        f"**{made.title} {made.version.name}**, per instance and `{made.label}`, rates over {made.window}, "
        f"alerts after {made.hold}.",
        "",
        f"Setup: {made.setup_text}. {decision.headline}",
        "",
        "| batches | k the config runs | best k | speedup at the best k, first batch |",
        "| --- | --- | --- | --- |",
        *(
            f"| {first}-{last} | {run_k} | {best_k} | {decision.best_speedup[first - 1]:.2f}× |"
            for first, last, (run_k, best_k) in runs_of(list(zip(made.engine_k, decision.best_k, strict=True)))
        ),
        "",
        f"Acceptance is held to p >= {made.p_low:g} (the schedule is for p = {made.p:g}).",
    ]
    lines += [f"- not checked: {item}" for item in made.unchecked]
    return "\n".join(lines)


def build(made: RulesFile) -> dict[str, Any]:
    """The dashboard over ``made``'s recording rules (only the series they record)."""
    sel = _selector(made)
    panels: list[dict[str, Any]] = [
        {
            "id": 1,
            "type": "text",
            "title": "Setup and schedule",
            "gridPos": {"x": 0, "y": 0, "w": GRID_COLUMNS, "h": 7},
            "options": {"mode": "markdown", "content": _about(made)},
        }
    ]
    half = GRID_COLUMNS // 2
    panels.append(
        _timeseries(
            2,
            "Tokens per verification against break-even",
            "Tokens each verification yields (1 + accepted / drafts) against the cycle cost k c + v(k) of this setup "
            "at the running batch: speculation pays while the first is above the second.",
            (0, 7, half, 9),
            [
                _target("A", f"{rules.TOKENS}{sel}", _legend(made, "tokens per verification")),
                _target("B", f"{rules.BREAK_EVEN}{sel}", _legend(made, "break-even")),
            ],
            minimum=1.0,
        )
    )
    panels.append(
        _timeseries(
            3,
            "Implied speedup",
            "Tokens per verification over the break-even: below 1 speculation makes this class slower.",
            (half, 7, half, 9),
            [_target("A", f"{rules.SPEEDUP}{sel}", _legend(made, ""))],
            unit="x",
            thresholds=[("red", None), ("green", 1.0)],
        )
    )
    acceptance = [_target("A", f"{rules.ACCEPTANCE}{sel}", _legend(made, "p"))]
    if rules.AT_POSITION in made.records:
        acceptance.append(_target("B", f"{rules.AT_POSITION}{sel}", _legend(made, "accepted at position {{position}}")))
        how = "Share of drafts whose token at each position (from 0) was accepted, and p (position 0)."
    else:
        how = f"{made.title} exports no per-position counters: p is read from tokens per verification at the k running."
    panels.append(
        _timeseries(
            4,
            "Acceptance per position",
            f"{how} The line is the calibrated lower bound p_low = {made.p_low:g}.",
            (0, 16, half, 9),
            acceptance,
            unit="percentunit",
            thresholds=[("red", None), ("green", made.p_low)],
        )
    )
    batch_targets = [
        _target("A", f"{rules.RUNNING_BATCH}{sel}", _legend(made, "running batch")),
        _target("B", f"{rules.SCHEDULE_K}{sel}", _legend(made, "k of the schedule")),
    ]
    if rules.RUNNING_K in made.records:
        batch_targets.append(_target("C", f"{rules.RUNNING_K}{sel}", _legend(made, "k the engine runs")))
    right_axis = [
        {
            "matcher": {"id": "byFrameRefID", "options": ref},
            "properties": [
                {"id": "custom.axisPlacement", "value": "right"},
                {"id": "custom.axisLabel", "value": "draft length k"},
            ],
        }
        for ref in ("B", "C")[: len(batch_targets) - 1]
    ]
    off = made.decision.off_from_batch
    panels.append(
        _timeseries(
            5,
            "Running batch against the schedule",
            "The batch the engine runs (left) against the schedule's k at that batch and the k the engine runs "
            "(right)"
            + (f"; the line is the batch from which the schedule turns speculation off ({off})." if off else "."),
            (half, 16, half, 9),
            batch_targets,
            thresholds=[("green", None), ("red", float(off))] if off else None,
            overrides=right_axis,
        )
    )
    batch = f'{rules.RUNNING_BATCH}{{{rules.RULES_LABEL}="{made.rules_id}"}}'
    variables: list[dict[str, Any]] = [
        {
            "name": "datasource",
            "label": "Prometheus",
            "type": "datasource",
            "query": "prometheus",
            "current": {},
            "hide": 0,
        },
        _query_variable("instance", "instance", f"label_values({batch}, instance)"),
    ]
    if made.label != "instance":
        variables.append(_query_variable("class", made.label, f"label_values({batch}, {made.label})"))
    key = f"{made.engine}:{made.version.name}:{made.label}:{made.window}:{made.match}"
    return {
        "id": None,
        "uid": "specdec-" + hashlib.sha256(key.encode()).hexdigest()[:16],
        "title": f"Speculative decoding: {made.title} {made.version.name}",
        "description": f"specdec-lab: {made.setup_text}" + (f"; how good: {made.accuracy}" if made.accuracy else ""),
        "tags": ["specdec-lab", "speculative-decoding", made.engine],
        "timezone": "browser",
        "editable": True,
        "graphTooltip": 1,
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {"refresh_intervals": ["10s", "30s", "1m", "5m", "15m"]},
        "templating": {"list": variables},
        "annotations": {
            "list": [
                {
                    "builtIn": 1,
                    "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                    "enable": True,
                    "hide": True,
                    "iconColor": "rgba(0, 211, 255, 1)",
                    "name": "Annotations & Alerts",
                    "type": "dashboard",
                }
            ]
        },
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "links": [],
        "panels": panels,
    }


def _query_variable(name: str, label: str, query: str) -> dict[str, Any]:
    return {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": query, "refId": f"{name}-values"},
        "definition": query,
        "refresh": 2,
        "includeAll": True,
        "multi": True,
        "allValue": ".*",
        "current": {},
        "hide": 0,
        "sort": 1,
    }
