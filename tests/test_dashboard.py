"""The Grafana dashboard (`specdec-lab dashboard`, GET /api/v1/dashboard) against Grafana's documented dashboard
JSON model: Grafana is not in the package registries here, so its structure is checked field by field as the
documentation describes it (grafana.com/docs/grafana/latest/dashboards/json-model: the dashboard's fields, panels
on a 24-column grid with ``gridPos`` x, y, w (1-24), h, ``targets`` with ``refId``, template variables), and
every query is handed to `promtool check rules` to be parsed by Prometheus itself."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from app.model import engines, rules
from app.model.live import dashboard
from app.service.regimes import SetupRequest, build_setup
from tests.planned import planned_rules

SETUP = build_setup(SetupRequest()).setup
# The classic model's dashboard fields and their JSON types (the documentation's table).
DASHBOARD_FIELDS: dict[str, type | tuple[type, ...]] = {
    "id": type(None),
    "uid": str,
    "title": str,
    "tags": list,
    "timezone": str,
    "editable": bool,
    "graphTooltip": int,
    "time": dict,
    "timepicker": dict,
    "templating": dict,
    "annotations": dict,
    "refresh": str,
    "schemaVersion": int,
    "version": int,
    "links": list,
    "panels": list,
}
PANEL_FIELDS = {"id": int, "type": str, "title": str, "gridPos": dict}
VARIABLE_TYPES = {"query", "datasource", "custom", "constant", "interval", "textbox", "adhoc"}


def every_dashboard() -> list[tuple[rules.RulesFile, dict[str, Any]]]:
    made = []
    for engine in engines.ENGINES:
        for version, metrics in engines.adapter(engine).RULES_METRICS.items():
            if metrics.missing:
                continue
            for label in ("model_name", "instance"):
                request = rules.RulesRequest(engine=engine, version=version, label=label)
                found = planned_rules(request, SETUP)
                made.append((found, dashboard.build(found)))
    return made


DASHBOARDS = every_dashboard()


def overlaps(a: dict[str, int], b: dict[str, int]) -> bool:
    return (
        a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]
    )


@pytest.mark.parametrize(("made", "board"), DASHBOARDS, ids=lambda item: getattr(item, "rules_id", ""))
def test_the_dashboard_follows_grafanas_json_model(made: rules.RulesFile, board: dict[str, Any]) -> None:
    assert json.loads(json.dumps(board)) == board  # plain JSON
    for name, kind in DASHBOARD_FIELDS.items():
        assert isinstance(board[name], kind), name
    assert 8 <= len(board["uid"]) <= 40 and re.fullmatch(r"[A-Za-z0-9_-]+", board["uid"])
    assert board["timezone"] in ("browser", "utc") and board["graphTooltip"] in (0, 1, 2)
    assert set(board["time"]) == {"from", "to"} and board["schemaVersion"] >= 36
    assert all(isinstance(tag, str) for tag in board["tags"])
    variables = board["templating"]["list"]
    names = [variable["name"] for variable in variables]
    assert len(names) == len(set(names)) and all(variable["type"] in VARIABLE_TYPES for variable in variables)
    assert "datasource" in names
    panels = board["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)
    for panel in panels:
        for name, kind in PANEL_FIELDS.items():
            assert isinstance(panel[name], kind), (panel["title"], name)
        grid = panel["gridPos"]
        assert set(grid) == {"x", "y", "w", "h"} and all(isinstance(value, int) for value in grid.values())
        assert 1 <= grid["w"] <= 24 and grid["x"] >= 0 and grid["x"] + grid["w"] <= 24 and grid["h"] >= 1
        if panel["type"] == "text":
            assert panel["options"]["mode"] == "markdown" and panel["options"]["content"]
            continue
        assert panel["type"] == "timeseries" and panel["datasource"]["type"] == "prometheus"
        targets = panel["targets"]
        assert targets and len({target["refId"] for target in targets}) == len(targets)
        for target in targets:
            assert target["expr"] and target["datasource"] == panel["datasource"]
            for used in re.findall(r"\$(\w+)", target["expr"]):
                assert used in names, used
        defaults = panel["fieldConfig"]["defaults"]
        assert defaults["thresholds"]["mode"] == "absolute" and defaults["thresholds"]["steps"][0]["value"] is None
        for override in panel["fieldConfig"]["overrides"]:
            assert override["matcher"]["options"] in {target["refId"] for target in targets}
    for first, second in itertools.combinations(panels, 2):
        assert not overlaps(first["gridPos"], second["gridPos"]), (first["title"], second["title"])
    titles = " ".join(panel["title"] for panel in panels)
    for wanted in ("Tokens per verification against break-even", "Implied speedup", "Acceptance per position"):
        assert wanted in titles
    assert "Running batch against the schedule" in titles


@pytest.mark.parametrize(("made", "board"), DASHBOARDS, ids=lambda item: getattr(item, "rules_id", ""))
def test_every_query_reads_what_the_rules_record_and_parses(
    made: rules.RulesFile, board: dict[str, Any], tmp_path: Path
) -> None:
    exprs = [target["expr"] for panel in board["panels"] for target in panel.get("targets", [])]
    exprs += [variable["query"]["query"] for variable in board["templating"]["list"] if variable["type"] == "query"]
    for expr in exprs:
        for name in re.findall(r"specdec:[a-z_]+", expr):
            assert name in made.records, (name, expr)
    # label_values() is Grafana's, not PromQL: its metric is checked above; the panel queries go to promtool.
    queries = [expr.replace("$instance", ".*").replace("$class", ".*") for expr in exprs if "label_values" not in expr]
    document = {
        "groups": [
            {"name": "dashboard", "rules": [{"record": f"check:q{i}", "expr": q} for i, q in enumerate(queries)]}
        ]
    }
    path = tmp_path / "queries.yml"
    path.write_text(yaml.safe_dump(document))
    promtool = shutil.which("promtool")
    assert promtool, "promtool is required: `make prometheus`"
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_panels_show_what_the_engine_exports() -> None:
    by_id = {made.rules_id + made.label: board for made, board in DASHBOARDS}
    sglang = by_id["sglangmodel_name"]
    acceptance = next(panel for panel in sglang["panels"] if panel["title"] == "Acceptance per position")
    assert len(acceptance["targets"]) == 1 and "no per-position counters" in acceptance["description"]
    vllm = by_id["vllmmodel_name"]
    acceptance = next(panel for panel in vllm["panels"] if panel["title"] == "Acceptance per position")
    assert any(rules.AT_POSITION in target["expr"] for target in acceptance["targets"])
    assert all(f'{rules.RULES_LABEL}="vllm"' in target["expr"] for target in acceptance["targets"])


def test_the_api_serves_the_dashboard(client: TestClient) -> None:
    board = client.get("/api/v1/dashboard?engine=trtllm&window=1m").json()
    assert board["title"] == "Speculative decoding: TensorRT-LLM 2026-09" and board["schemaVersion"] >= 36
    assert client.get("/api/v1/dashboard?engine=trtllm&engine_version=2025-10").status_code == 422
