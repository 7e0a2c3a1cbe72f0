"""POST /api/v1/rollout/plan: the rollout plan of a pasted scrape with several classes, its body bounded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.model.counters.calibration import MAX_EXPOSITION_BYTES
from app.model.live import rollout_plan
from app.web.main import app
from tests.test_rollout_plan import exposition

client = TestClient(app)


def test_a_pasted_scrape_with_two_classes_is_planned_in_rollout_order() -> None:
    answered = client.post("/api/v1/rollout/plan", content=exposition(10.0), headers={"content-type": "text/plain"})
    assert answered.status_code == 200, answered.text
    classes = answered.json()["classes"]
    assert [(row["class"], row["verdict"]) for row in classes] == [
        ("chat", rollout_plan.TURN_ON),
        ("code", rollout_plan.LEAVE_OFF),
    ]
    assert classes[0]["config"]["flags"] and classes[0]["gain"]["low"] > 1.0


def test_the_plan_and_the_check_have_response_schemas_that_keep_every_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both answers are declared in the OpenAPI document, and the API drops nothing the command line's JSON (the
    same report, built once in the application layer) holds."""
    from app.cli import main

    paths = app.openapi()["paths"]
    for path, model in (("/api/v1/rollout/plan", "RolloutPlanOut"), ("/api/v1/rollout/check", "RolloutCheckOut")):
        schema = paths[path]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
        assert schema == {"$ref": f"#/components/schemas/{model}"}
    scrape = tmp_path / "scrape.prom"
    scrape.write_text(exposition(10.0))
    assert main(["rollout", "plan", "--from", str(scrape), "--format", "json"]) == 0
    by_cli = json.loads(capsys.readouterr().out)
    answered = client.post("/api/v1/rollout/plan", content=exposition(10.0)).json()
    assert by_cli["queries"] == []  # the queries asked of a Prometheus: none for a scrape, on both
    assert answered == by_cli


def test_bad_bodies_get_a_422_naming_the_body() -> None:
    for body, words in (
        ("", "is required"),
        ("not a scrape {", "not Prometheus text"),
        ("x" * (MAX_EXPOSITION_BYTES + 1), f"at most {MAX_EXPOSITION_BYTES:,} bytes"),
        (b"\xff\xfe", "UTF-8"),
    ):
        answered = client.post("/api/v1/rollout/plan", content=body)
        assert answered.status_code == 422, answered.text
        detail = answered.json()["detail"][0]
        assert detail["loc"] == ["body", "metrics"] and words in detail["msg"], detail
    refused = client.post("/api/v1/rollout/plan?k_max=0", content=exposition(10.0))
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["query", "k_max"]


def test_the_check_reads_prometheus_only_where_the_server_allows_it() -> None:
    params = {"prometheus": "http://127.0.0.1:1", "canary": 'role="canary"', "control": 'role="control"'}
    refused = client.post("/api/v1/rollout/check", params=params)
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["query", "prometheus"]
    assert "SPECDEC_ALLOW_FETCH" in refused.json()["detail"][0]["msg"]


def test_the_check_over_a_prometheus_answers_the_verdict_and_its_exit_code() -> None:
    from app.web.core.config import Settings
    from app.web.main import create_app
    from tests.test_rollout import Fleet, serving

    allowed = TestClient(create_app(Settings(allow_fetch=True)))
    fleet = Fleet({("canary", "chat"): 0.02, ("control", "chat"): 0.04}, {"chat"})
    with serving(fleet.answer) as url:
        params = {"prometheus": url, "canary": 'role="canary"', "control": 'role="control"', "window": "10m"}
        answered = allowed.post("/api/v1/rollout/check", params=params)
        assert answered.status_code == 200, answered.text
        report = answered.json()
        assert report["verdict"] == "promote" and report["exit_code"] == 0
        assert report["classes"][0]["speedup"]["low"] > 1.0
        # the API answers the application layer's report as it is (read again at the same end)
        from app.service.clients import rollout as rollout_client
        from app.service.clients.prometheus import Prometheus

        request = rollout_client.CheckRequest(canary='role="canary"', control='role="control"', window_s=600.0)
        checked = rollout_client.check(Prometheus(url), request, clock=lambda: report["end"])
        again = json.loads(checked.model_dump_json(by_alias=True))
        # the engine is detected at the moment of asking: the first query's time is the clock's, not the window's
        asked, asked_again = report.pop("queries"), again.pop("queries")
        assert [item["query"] for item in asked] == [item["query"] for item in asked_again] and asked[
            1:
        ] == asked_again[1:]
        assert again == report
        short = allowed.post("/api/v1/rollout/check", params={**params, "window": "2m"})
        assert short.status_code == 422 and short.json()["detail"][0]["loc"] == ["query", "window"]
        same = allowed.post("/api/v1/rollout/check", params={**params, "control": 'role="canary"'})
        assert same.status_code == 422 and same.json()["detail"][0]["loc"] == ["query", "control"]
        # each parameter is checked on its own before canary against control and the window against the interval
        both = allowed.post("/api/v1/rollout/check", params={**params, "control": 'role="canary"', "label": "a-b"})
        assert both.status_code == 422 and both.json()["detail"][0]["loc"] == ["query", "label"]
        short_and_bad = allowed.post("/api/v1/rollout/check", params={**params, "window": "2m", "calibrated": "x"})
        assert short_and_bad.status_code == 422 and short_and_bad.json()["detail"][0]["loc"] == ["query", "calibrated"]


def test_the_check_takes_its_inputs_as_declared_once() -> None:
    """/rollout/check's parameters come from app.service.rollout_inputs: the OpenAPI bounds, the defaults, the
    422 on an empty matcher, and the command line's defaults are the same declaration's."""
    from app.cli import build_parser
    from app.service import rollout_inputs

    operation = app.openapi()["paths"]["/api/v1/rollout/check"]["post"]
    schemas = {item["name"]: item["schema"] for item in operation["parameters"]}
    assert schemas["canary"]["minLength"] == 1 and schemas["canary"]["maxLength"] == rollout_inputs.CANARY.max_length
    assert schemas["window"]["default"] == rollout_inputs.WINDOW.default == "30m"
    assert schemas["interval"]["default"] == rollout_inputs.INTERVAL.default
    assert schemas["prometheus"]["maxLength"] == rollout_inputs.MAX_URL
    params = {"prometheus": "http://127.0.0.1:1", "canary": "", "control": 'role="control"'}
    refused = client.post("/api/v1/rollout/check", params=params)
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["query", "canary"]
    assert f"1 to {rollout_inputs.CANARY.max_length} characters" in refused.json()["detail"][0]["msg"]
    parsed = build_parser().parse_args(["rollout", "check", *("--prometheus", "u", "--canary", "a", "--control", "b")])
    assert (parsed.window, parsed.interval) == (rollout_inputs.WINDOW.default, rollout_inputs.INTERVAL.default)


def test_a_class_label_that_is_not_a_prometheus_label_name_gets_a_422_naming_it() -> None:
    """The check writes the label into PromQL and the plan reads classes by it: both refuse what the rules refuse
    (not a label name, or one starting with __), before anything is read or fetched."""
    from app.web.core.config import Settings
    from app.web.main import create_app

    allowed = TestClient(create_app(Settings(allow_fetch=True)))
    check = {"prometheus": "http://127.0.0.1:1", "canary": 'role="canary"', "control": 'role="control"'}
    for bad in ("1bad", 'model_name"} or vector(1)', "__name__", "a-b"):
        planned = client.post("/api/v1/rollout/plan", params={"label": bad}, content=exposition(10.0))
        checked = allowed.post("/api/v1/rollout/check", params={**check, "label": bad})
        for answered in (planned, checked):
            assert answered.status_code == 422, answered.text
            detail = answered.json()["detail"][0]
            assert detail["loc"] == ["query", "label"] and "Prometheus label name" in detail["msg"], detail
