from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.model.arithmetic import closed_form as cf
from app.model.limits import K_SEARCH_MAX


def test_expected_tokens(client: TestClient) -> None:
    body = client.get("/api/v1/expected-tokens", params={"p": 0.8, "k": 5}).json()
    assert round(body["expected_tokens"], 2) == 3.69
    assert len(body["accepted_distribution"]) == 6


def test_cost(client: TestClient) -> None:
    assert client.get("/api/v1/cost", params={"k": 6, "c": 0.15}).json()["cost_per_cycle"] == pytest.approx(1.9)


def test_speedup_defaults_are_the_seed_demo(client: TestClient) -> None:
    body = client.get("/api/v1/speedup").json()
    assert (body["p"], body["k"], body["c"]) == (0.75, 6, 0.15)
    assert round(body["expected_tokens"], 2) == 3.47
    assert round(body["cost_per_cycle"], 2) == 1.90
    assert round(body["speedup"], 2) == 1.82


def test_optimal_k(client: TestClient) -> None:
    body = client.get("/api/v1/optimal-k", params={"p": 0.75, "c": 0.15, "k_max": 12}).json()
    assert body["best_k"] == 4
    assert body["speculate"] is True
    off = client.get("/api/v1/optimal-k", params={"p": 0.1, "c": 0.9}).json()
    assert off == {
        "p": 0.1,
        "c": 0.9,
        "k_max": K_SEARCH_MAX,
        "best_k": 0,
        "speedup": 1.0,
        "speculate": False,
        "k_search_max": K_SEARCH_MAX,
        "limit_reached": False,
    }


def test_break_even(client: TestClient) -> None:
    body = client.get("/api/v1/break-even", params={"p": 0.75, "k": 6, "c": 0.15}).json()
    assert cf.speedup(body["break_even_acceptance"], 6, 0.15) == pytest.approx(1.0)
    assert cf.speedup(0.75, 6, body["max_draft_cost"]) == pytest.approx(1.0)
    assert body["leviathan_guarantee"] == pytest.approx(1.75 / 1.15)
    never = client.get("/api/v1/break-even", params={"p": 0.5, "k": 2, "c": 5}).json()
    assert never["break_even_acceptance"] is None


def test_serving_metrics(client: TestClient) -> None:
    body = client.get("/api/v1/serving-metrics", params={"p": 0.75, "k": 6}).json()
    assert body["draft_acceptance_rate"] == pytest.approx(cf.draft_acceptance_rate(0.75, 6))
    assert body["mean_acceptance_length"] == pytest.approx(cf.expected_tokens(0.75, 6))


def test_operations(client: TestClient) -> None:
    body = client.get("/api/v1/operations", params={"p": 0.9, "k": 10}).json()
    assert round(body["operations_increase"], 2) == 1.60


def test_curve_has_everything_the_page_needs(client: TestClient) -> None:
    body = client.get("/api/v1/curve", params={"p": 0.75, "k": 6, "c": 0.15, "k_max": 12, "band": 0.1}).json()
    assert [point["k"] for point in body["points"]] == list(range(13))
    assert body["best_k"] == 4
    assert body["break_even_speedup"] == 1.0
    assert body["p_low"] == pytest.approx(0.65)
    assert body["p_high"] == pytest.approx(0.85)
    for point in body["points"]:
        assert point["speedup_low"] <= point["speedup"] <= point["speedup_high"]
    assert body["points"][6]["speedup"] == pytest.approx(body["speedup"])


def test_curve_extends_to_the_current_k(client: TestClient) -> None:
    body = client.get("/api/v1/curve", params={"k": 20, "k_max": 12}).json()
    assert body["k_max"] == 20
    assert len(body["points"]) == 21


def test_run_is_seeded(client: TestClient) -> None:
    params = {"p": 0.75, "k": 6, "c": 0.15, "tokens": 100, "seed": 42}
    first = client.get("/api/v1/run", params=params).json()
    assert first == client.get("/api/v1/run", params=params).json()
    assert first["tokens"] >= 100
    assert first["cycles"][-1]["total_tokens"] == first["tokens"]
    assert first != client.get("/api/v1/run", params={**params, "seed": 43}).json()


def test_simulate_accepts_a_million_cycles(client: TestClient) -> None:
    body = client.get("/api/v1/simulate", params={"p": 0.75, "k": 6, "c": 0.15, "cycles": 1_000_000, "seed": 1}).json()
    low, high = body["interval_95"]
    assert low <= cf.expected_tokens(0.75, 6) <= high
    assert sum(body["histogram"]) == 1_000_000
    assert body["empirical_speedup"] == pytest.approx(body["closed_form_speedup"], rel=0.01)


def test_health(client: TestClient) -> None:
    assert client.get("/healthz").json()["status"] == "ok"


def test_openapi_lists_every_core_endpoint(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("expected-tokens", "cost", "speedup", "optimal-k", "curve", "run", "simulate"):
        assert f"/api/v1/{path}" in paths
        assert paths[f"/api/v1/{path}"]["get"]["description"] or paths[f"/api/v1/{path}"]["get"]["summary"]


BAD_INPUTS = [
    ("/api/v1/speedup", {"p": "nan"}, "p", "from 0 to 1"),
    ("/api/v1/speedup", {"p": "inf"}, "p", "from 0 to 1"),
    ("/api/v1/speedup", {"p": "-inf"}, "p", "from 0 to 1"),
    ("/api/v1/speedup", {"p": "1.5"}, "p", "from 0 to 1"),
    ("/api/v1/speedup", {"p": "-0.1"}, "p", "from 0 to 1"),
    ("/api/v1/speedup", {"p": "abc"}, "p", "from 0 to 1"),
    ("/api/v1/speedup", {"p": ""}, "p", "from 0 to 1"),
    ("/api/v1/speedup", {"k": "2.5"}, "k", "integer from 0 to 64"),
    ("/api/v1/speedup", {"k": "-1"}, "k", "integer from 0 to 64"),
    ("/api/v1/speedup", {"k": str(10**40)}, "k", "integer from 0 to 64"),
    ("/api/v1/speedup", {"c": "1e308"}, "c", "from 0 to 10"),
    ("/api/v1/optimal-k", {"k_max": "0"}, "k_max", "from 1 to 64"),
    ("/api/v1/curve", {"band": "0.9"}, "band", "from 0 to 0.5"),
    ("/api/v1/simulate", {"cycles": "2000001"}, "cycles", "from 1 to 2000000"),
    ("/api/v1/simulate", {"cycles": "0"}, "cycles", "from 1 to 2000000"),
    ("/api/v1/simulate", {"seed": "-5"}, "seed", "from 0 to 4294967295"),
    ("/api/v1/run", {"tokens": "100000"}, "tokens", "from 1 to 5000"),
    ("/api/v1/serving-metrics", {"k": "0"}, "k", "from 1 to 64"),
]


@pytest.mark.parametrize(("path", "params", "name", "bounds"), BAD_INPUTS)
def test_bad_input_names_the_parameter_and_its_bounds(
    client: TestClient, path: str, params: dict[str, str], name: str, bounds: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == 422
    message = response.json()["detail"][0]["msg"]
    assert message.startswith(name)
    assert bounds in message


def test_repeated_parameter_is_refused(client: TestClient) -> None:
    response = client.get("/api/v1/speedup?p=0.5&p=0.6")
    assert response.status_code == 422
    assert "p is given more than once" in response.json()["detail"][0]["msg"]
