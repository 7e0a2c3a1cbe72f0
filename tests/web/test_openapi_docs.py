"""The API's documentation says what the API does: methods, every page's view, summaries written for people."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.model import engines
from app.web.main import api_routes, app
from app.web.pages.registry import PAGES
from tests.samples import engine_reports

METHODS = {"get", "post", "put", "patch", "delete"}


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    paths = app.openapi()["paths"]
    return [(method, path, operation) for path, item in paths.items() for method, operation in item.items()]


def test_the_description_does_not_say_every_endpoint_is_a_get() -> None:
    description = app.openapi()["info"]["description"]
    assert "Every endpoint is a GET" not in description
    assert any(method == "post" for method, _, _ in operations()), "there are POST operations"
    assert "POST" in description and "[Back to the site](/)" in description


def test_every_page_s_view_is_documented(client: TestClient) -> None:
    paths = app.openapi()["paths"]
    for page in PAGES:
        operation = paths[f"/api/v1/views/{page.name}"]["get"]
        documented = {parameter["name"] for parameter in operation["parameters"]}
        assert documented == {control.name for control in page.controls if control not in page.body_controls}
        assert page.question in operation["description"]
        assert ("post" in paths[f"/api/v1/views/{page.name}"]) is bool(page.body_controls)
        twin = client.get(f"/api/v1/views/{page.name}")
        assert twin.status_code == 200 and twin.json()["page"] == page.name
    embed = paths["/api/v1/views/embed"]["get"]
    parts = next(parameter for parameter in embed["parameters"] if parameter["name"] == "parts")
    assert "controls, readouts, curve, run, histogram" in parts["description"]


def test_a_view_parameter_states_its_label_and_bounds() -> None:
    operation = app.openapi()["paths"]["/api/v1/views/demo"]["get"]
    k = next(parameter for parameter in operation["parameters"] if parameter["name"] == "k")
    assert k["schema"] == {"type": "integer", "minimum": 0, "maximum": 16, "default": 6}
    assert k["description"].startswith("Draft length k") and "an integer from 0 to 16" in k["description"]


def generated(name: str) -> str:
    """The summary FastAPI would make of a function's name."""
    return name.replace("_", " ").title()


@pytest.mark.parametrize("route", [route for route in api_routes(app.routes) if route.include_in_schema])
def test_no_summary_is_a_function_s_name(route: Any) -> None:
    paths = app.openapi()["paths"]
    for method in route.methods:
        summary = paths[route.path][method.lower()]["summary"]
        assert summary != generated(route.name), f"{method} {route.path}: {summary!r}"
        assert summary[0] == summary[0].upper() or summary[0] == "/"


def test_view_summaries_are_written_for_people() -> None:
    summaries = {
        path: operation["summary"] for method, path, operation in operations() if path.startswith("/api/v1/views/")
    }
    assert summaries["/api/v1/views/demo"] == "Page / as JSON (Demo)"
    assert all(" as JSON " in summary for summary in summaries.values())


def every_version_and_alias() -> set[str]:
    """What an engine_version may be, read from the registry here rather than from the declaration."""
    return {
        name
        for engine in engines.ENGINES
        for name in (*(version.name for version in engines.versions(engine)), *engines.adapter(engine).ALIASES)
    }


def test_every_engine_version_parameter_announces_the_known_versions_and_aliases() -> None:
    known = every_version_and_alias()
    announced: set[str] = set()
    for method, path, operation in operations():
        for parameter in operation.get("parameters", []):
            if parameter["name"] != "engine_version":
                continue
            schema = parameter["schema"]
            assert set(schema["enum"]) - {""} == known, (method, path)
            assert {"b11312", "0.29", "2026-08"} <= set(schema["enum"])
            assert "b11312" in parameter["description"] and "0.29" in parameter["description"]
            announced.add(f"{method} {path}")
    expected = {"get /api/v1/engine-config", "get /api/v1/rules", "get /api/v1/dashboard", "post /api/v1/calibrate"}
    assert expected | {"get /api/v1/views/decide"} <= announced


VERSIONED = [
    ("get", "/api/v1/engine-config", {"engine": "vllm", "p": 0.8}),
    ("get", "/api/v1/rules", {"engine": "vllm"}),
    ("get", "/api/v1/dashboard", {"engine": "vllm"}),
    ("post", "/api/v1/calibrate", {}),
]


@pytest.mark.parametrize(("method", "path", "params"), VERSIONED)
@pytest.mark.parametrize("version", ["v" * 70, "0.1", "b11312x", "", "  "])
def test_an_engine_version_outside_the_known_ones_gets_a_422_naming_it_and_the_known_ones(
    client: TestClient, method: str, path: str, params: dict[str, Any], version: str
) -> None:
    report = engine_reports.example_report("vllm-metrics", 0.8, 3, 3000, 4) if method == "post" else None
    response = client.request(method, path, params={**params, "engine_version": version}, content=report)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"][0]
    assert detail["loc"][-1] == "engine_version" and detail["msg"].startswith("engine_version")
    assert all(name in detail["msg"] for name in ("2025-10", "2026-08", "0.29")), detail["msg"]


@pytest.mark.parametrize(("method", "path", "params"), VERSIONED)
def test_an_alias_and_a_version_of_the_engine_are_taken(
    client: TestClient, method: str, path: str, params: dict[str, Any]
) -> None:
    report = engine_reports.example_report("vllm-metrics", 0.8, 3, 3000, 4) if method == "post" else None
    for version in ("0.29", "2026-08"):
        response = client.request(method, path, params={**params, "engine_version": version}, content=report)
        assert response.status_code == 200, response.text
