from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.model import closed_form
from app.web.pages.views.demo import readouts


@pytest.mark.parametrize(
    ("query", "location"),
    [
        ("rg_hw=a100-sxm&rg_p=0.7", "/batch?hw=a100-sxm&p=0.7"),
        ("xtrials=500000", "/exact?trials=500000"),  # a rebuilt page opens under its controls' names
        ("ngk=3&k=4", "/exact?ngram_k=3"),  # k was the demo's, not the page's
        ("cal_mode=rate&cal_rate=0.6", "/decide?mode=rate&rate=0.6"),
        ("tree_budget=32", "/decide?budget=32"),
    ],
)
def test_an_address_of_the_one_page_version_opens_its_section_s_page(
    client: TestClient, query: str, location: str
) -> None:
    response = client.get(f"/?{query}", follow_redirects=False)
    assert response.status_code == 302
    assert response.headers["location"] == location


@pytest.mark.parametrize("query", ["", "k=4&p=0.8", "embed=1", "unknown=1"])
def test_the_demo_s_own_addresses_stay(client: TestClient, query: str) -> None:
    assert client.get(f"/?{query}", follow_redirects=False).status_code == 200


def test_the_json_twin_is_the_view_the_page_was_painted_from(client: TestClient) -> None:
    view = client.get("/api/v1/views/demo", params={"k": 4, "p": 0.8, "c": 0.1}).json()
    assert view["page"] == "demo"
    assert view["readouts"] == {**view["readouts"], **readouts(0.8, 4, 0.1)}
    assert view["readouts"]["speedup"] == f"{closed_form.speedup(0.8, 4, 0.1):.2f}×"
    html = client.get("/", params={"k": 4, "p": 0.8, "c": 0.1}).text
    for key in ("tokens", "cost", "speedup", "best_k"):
        assert f'data-text="readouts.{key}"' in html
        assert f">{view['readouts'][key]}</span>" in html
    assert view["links"] == {**view["links"], "self": "/?k=4&p=0.8&c=0.1", "json": "/api/v1/views/demo?k=4&p=0.8&c=0.1"}


def test_the_json_twin_refuses_what_the_page_would_correct(client: TestClient) -> None:
    response = client.get("/api/v1/views/demo", params={"k": 20})
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert detail["label"] == "Draft length k"
    assert detail["msg"] == "Draft length k must be an integer from 0 to 16; got 20"
    assert client.get("/api/v1/views/nothing").status_code == 404


@pytest.mark.parametrize("parts", ["readouts,curve", "run", "nonsense"])
def test_embed_parts(client: TestClient, parts: str) -> None:
    html = client.get("/embed", params={"parts": parts}).text
    chosen = {"readouts,curve": {"readouts", "curve"}, "run": {"run"}}.get(
        parts, {"controls", "readouts", "curve", "run"}
    )
    assert ('id="tokens"' in html) is ("readouts" in chosen)
    assert ('id="curve"' in html) is ("curve" in chosen)
    assert ('id="run-tokens"' in html) is ("run" in chosen)
    assert ('id="k"' in html) is ("controls" in chosen)
    assert "Open in specdec-lab" in html and "site-header" not in html


def test_best_k_does_not_depend_on_the_chart_s_range(client: TestClient) -> None:
    narrow = client.get("/api/v1/views/demo", params={"k": 4, "p": 0.99, "c": 0.15}).json()
    wide = client.get("/api/v1/views/demo", params={"k": 16, "p": 0.99, "c": 0.15}).json()
    best, _ = closed_form.best_k(0.99, 0.15, 64)
    assert best > 16
    assert narrow["readouts"]["best_k"] == wide["readouts"]["best_k"] == str(best)
    curve = narrow["figures"]["curve"]
    assert max(curve["data"][2]["x"]) >= best, "the chart widens to show the best k"
    assert "searched over 1 to 64" in narrow["readouts"]["best_limit"]


def test_the_search_limit_is_said_when_it_is_reached(client: TestClient) -> None:
    view = client.get("/api/v1/views/demo", params={"p": 1, "c": 0}).json()
    assert view["readouts"]["best_k"] == "≥ 64"
    assert "still gains at 64" in view["readouts"]["best_limit"]


def test_one_number_for_the_largest_useful_draft_cost_and_the_engine_s_rate(client: TestClient) -> None:
    html = client.get("/", params={"k": 5, "p": 0.7}).text
    assert 'id="max-cost"' not in html
    assert "largest draft cost that breaks even" in html
    assert closed_form.max_draft_cost(0.7, 5) == pytest.approx(closed_form.draft_acceptance_rate(0.7, 5))
