"""The API's contract: best k over a stated range, unknown parameters, HEAD, declared bounds, heavy-work bound."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from app.model import limits
from app.model.arithmetic import closed_form as cf
from app.model.arithmetic import draft_sources, trees
from app.web.core.contract import nearest_name
from app.web.core.heavy import HeavyWorkLimiter
from app.web.main import api_routes, app, heavy_operations


def _get_operations() -> list[tuple[str, dict[str, Any]]]:
    paths = app.openapi()["paths"]
    return [(path, operations["get"]) for path, operations in sorted(paths.items()) if "get" in operations]


def _required_params(operation: dict[str, Any]) -> dict[str, str]:
    """Values that satisfy each required parameter of an operation."""
    examples = {
        "rate": "0.5",
        "k": "4",
        "length": "2.5",
        "drafts": "100",
        "draft_tokens": "400",
        "accepted": "150",
        "engine": "vllm",
    }
    return {
        item["name"]: examples[item["name"]]
        for item in operation.get("parameters", [])
        if item.get("required") and item.get("in") == "query"
    }


# ---------------------------------------------------------------------------
# 1. Best k over a stated range


def test_curve_best_k_does_not_depend_on_the_charts_axis(client: TestClient) -> None:
    # /?k=4&p=0.99&c=0.15 showed best k 12 and /?k=16&... showed 16; the argmax over 1..64 is 31.
    expected = cf.best_k(0.99, 0.15, limits.K_SEARCH_MAX)
    for k, k_max in ((4, 12), (16, 16), (6, 40)):
        body = client.get("/api/v1/curve", params={"p": 0.99, "k": k, "c": 0.15, "k_max": k_max}).json()
        assert (body["best_k"], body["best_speedup"]) == expected
        assert body["k_search_max"] == limits.K_SEARCH_MAX
        assert body["limit_reached"] is False
        assert len(body["points"]) == max(k, k_max) + 1
    assert expected[0] == 31


def test_best_k_says_when_the_search_limit_is_reached(client: TestClient) -> None:
    curve = client.get("/api/v1/curve", params={"p": 0.5, "c": 0}).json()
    assert curve["best_k"] == limits.K_SEARCH_MAX and curve["limit_reached"] is True
    optimal = client.get("/api/v1/optimal-k", params={"p": 0.99, "c": 0.15, "k_max": 8}).json()
    assert optimal["best_k"] == 8 and optimal["k_search_max"] == 8 and optimal["limit_reached"] is True
    optimal = client.get("/api/v1/optimal-k", params={"p": 0.99, "c": 0.15}).json()
    assert optimal["best_k"] == 31 and optimal["k_search_max"] == limits.K_SEARCH_MAX
    assert optimal["limit_reached"] is False


def test_optimal_k_at_zero_cost_is_the_true_argmax(client: TestClient) -> None:
    body = client.get("/api/v1/optimal-k", params={"p": 0.5, "c": 0, "k_max": 64}).json()
    assert body["best_k"] == 64  # was 53, where the floating speedups stop changing


def test_schedule_searches_a_stated_range_and_says_when_it_binds(client: TestClient) -> None:
    wide = client.get("/api/v1/regimes/schedule", params={"p": 0.95}).json()
    assert wide["k_max"] == wide["k_search_max"] == limits.K_SEARCH_MAX
    narrow = client.get("/api/v1/regimes/schedule", params={"p": 0.95, "k_max": 3}).json()
    assert narrow["limit_reached"] is True
    assert narrow["steps"][0]["k"] == 3 and narrow["steps"][0]["limit_reached"] is True
    assert wide["steps"][0]["k"] > 3 and wide["steps"][0]["limit_reached"] is False


def test_calibration_and_sources_say_when_best_k_is_the_limit(client: TestClient) -> None:
    body = client.get("/api/v1/calibrate/rate", params={"rate": 0.9, "k": 4, "c": 0.01, "k_max": 4}).json()
    assert body["best_k"] == 4 and body["k_search_max"] == 4 and body["limit_reached"] is True
    sources = client.get("/api/v1/draft-sources", params={"k_max": 2}).json()["sources"]
    assert all(source["limit_reached"] == (source["best_k"] == 2) for source in sources)
    assert any(source["limit_reached"] for source in sources)


# ---------------------------------------------------------------------------
# 2. Edges through the API


def test_break_even_where_only_p_one_breaks_even(client: TestClient) -> None:
    body = client.get("/api/v1/break-even", params={"p": 0.5, "k": 6, "c": 1}).json()
    assert body["break_even_acceptance"] == 1.0
    table = client.get("/api/v1/regimes/verification-cost", params={"regime": "compute-bound", "c": 0}).json()
    assert table["break_even_acceptance"] == 1.0


def test_max_draft_cost_for_tiny_p(client: TestClient) -> None:
    body = client.get("/api/v1/break-even", params={"p": 1e-12, "k": 1}).json()
    assert body["max_draft_cost"] == 1e-12


def test_simulation_interval_for_two_cycles(client: TestClient) -> None:
    low, high = client.get("/api/v1/simulate", params={"cycles": 2}).json()["interval_95"]
    assert 1.0 <= low < high <= 7.0


# ---------------------------------------------------------------------------
# 3. Claims


def test_operations_readout_of_curve_takes_c_ops(client: TestClient) -> None:
    body = client.get("/api/v1/curve", params={"p": 0.8, "k": 5, "c_ops": 0.2}).json()
    assert body["c_ops"] == 0.2
    assert body["operations_increase"] == cf.operations_increase(0.8, 5, 0.2)
    assert client.get("/api/v1/curve").json()["c_ops"] == 0.0


def test_default_tree_verification_grows_with_its_nodes(client: TestClient) -> None:
    body = client.get("/api/v1/trees", params={"budget": trees.MAX_TREE_BUDGET}).json()
    assert body["regime"]["name"] == limits.DEFAULT_TREE_REGIME == "roofline"
    assert body["best_budget"] < trees.MAX_TREE_BUDGET  # was the whole budget: verification was free
    assert "Roofline" in body["verification_assumption"] and "grows" in body["verification_assumption"]
    free = client.get("/api/v1/trees", params={"budget": 256, "regime": "memory-bound"}).json()
    assert "any size costs one target pass" in free["verification_assumption"]


def test_the_two_optimal_trees_are_named_apart(client: TestClient) -> None:
    body = client.get("/api/v1/trees", params={"budget": 32}).json()
    best = body["families"][-1]
    assert best["kind"] == "best_speedup" and best["name"] == trees.BEST_SPEEDUP_TREE
    assert body["most_tokens_values"] == pytest.approx(
        list(trees.optimal_tree_values(limits.DEFAULT_TREE_ACCEPTANCE, 32))
    )
    assert body["best_speedup_shape"] == body["optimal_shape"]
    assert not any(family["name"] == "optimal tree" for family in body["families"])


def test_draft_sources_claim_matches_the_ranking(client: TestClient) -> None:
    body = client.get("/api/v1/draft-sources").json()
    assert "which is the speedup" in body["derivation"]
    assert "decisive figure is accepted length per unit of draft cost" not in body["derivation"]
    by_speedup = sorted(body["sources"], key=lambda source: -source["best_speedup"])
    assert [source["id"] for source in body["sources"]] == [source["id"] for source in by_speedup]
    ngram = next(source for source in body["sources"] if source["id"] == "ngram")
    assert ngram["accepted_per_draft_cost"] == max(source["accepted_per_draft_cost"] for source in body["sources"])
    assert {source["id"] for source in body["sources"]} == set(draft_sources.SOURCE_IDS)  # every source, once
    assert len(body["sources"]) == len(draft_sources.SOURCE_IDS)


# ---------------------------------------------------------------------------
# 4. Unknown parameters


def test_unknown_parameter_names_itself_and_the_nearest(client: TestClient) -> None:
    response = client.get("/api/v1/speedup", params={"P": 0.9})  # used to answer for p = 0.75
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {"loc": ["query", "P"], "msg": "`P`: unknown parameter; did you mean `p`?", "type": "unknown_parameter"}
    ]
    assert nearest_name("k_mx", ["k", "k_max", "p"]) == "k_max"
    assert nearest_name("zzzz", ["k", "p"]) is None


@pytest.mark.parametrize(("path", "operation"), _get_operations(), ids=lambda item: str(item)[:40])
def test_every_api_operation_refuses_unknown_parameters(
    client: TestClient, path: str, operation: dict[str, Any]
) -> None:
    if not path.startswith("/api/v1/"):
        return
    address = path.replace("{job_id}", "no-such-job")  # a path parameter: unknown query parameters come first
    response = client.get(address, params={**_required_params(operation), "bogus_parameter": "1"})
    if operation.get("x-accepts-unknown-parameters"):  # a page's JSON twin: old addresses keep working
        assert path.startswith("/api/v1/views/") and response.status_code == 200, path
        return
    assert response.status_code == 422, path
    assert response.json()["detail"][0]["loc"] == ["query", "bogus_parameter"]
    assert response.json()["detail"][0]["msg"].startswith("`bogus_parameter`: unknown parameter")


def test_pages_keep_accepting_old_url_keys(client: TestClient) -> None:
    twin = client.get("/api/v1/views/demo", params={"k": 4, "whatever": "x"})
    assert twin.status_code == 200, twin.text
    for path in ("/", "/embed"):
        assert client.get(path, params={"dec_c": "0.2", "rg_hw": "b200", "P": "1", "whatever": "x"}).status_code == 200


def test_post_operation_refuses_unknown_parameters(client: TestClient) -> None:
    response = client.post("/api/v1/calibrate/metrics", params={"kk": 4}, content="x")
    assert response.status_code == 422
    assert response.json()["detail"][0]["msg"] == "`kk`: unknown parameter; did you mean `k`?"


# ---------------------------------------------------------------------------
# 5. HEAD


def _get_paths() -> list[str]:
    paths = [route.path for route in api_routes(app.routes) if "GET" in route.methods and "{" not in route.path]
    assert {"/", "/healthz", "/embed", "/api/v1/speedup"} <= set(paths)
    return sorted(set(paths))


@pytest.mark.parametrize("path", _get_paths())
def test_head_is_answered_wherever_get_is(client: TestClient, path: str) -> None:
    operation = dict(_get_operations()).get(path, {})
    params = _required_params(operation)
    got = client.get(path, params=params)
    head = client.head(path, params=params)
    assert head.status_code == got.status_code == 200, path
    assert head.content == b""
    assert head.headers.get("content-type") == got.headers.get("content-type")


def test_head_of_the_page_and_the_probe(client: TestClient) -> None:
    for path in ("/", "/healthz"):
        response = client.head(path)
        assert response.status_code == 200 and response.content == b""
        assert response.headers["content-length"] == client.get(path).headers["content-length"]


# ---------------------------------------------------------------------------
# 6. Bounds in the schema


def _parameter(path: str, name: str) -> dict[str, Any]:
    operation = app.openapi()["paths"][path]["get"]
    return next(item for item in operation["parameters"] if item["name"] == name)


def test_single_parameter_bounds_are_declared(client: TestClient) -> None:
    widths = _parameter("/api/v1/trees", "widths")["schema"]
    assert widths["maxLength"] == limits.MAX_WIDTHS_TEXT == 100 and "pattern" in widths
    assert "pattern" in _parameter("/api/v1/draft-sources", "overrides")["schema"]
    assert "pattern" in _parameter("/api/v1/trees", "acceptance")["schema"]
    assert _parameter("/api/v1/calibrate/counters", "drafts")["schema"]["minimum"] == 1
    body = app.openapi()["paths"]["/api/v1/calibrate/metrics"]["post"]["requestBody"]["content"]
    assert body["text/plain"]["schema"]["minLength"] == 1
    assert body["application/json"]["schema"]["properties"]["metrics"]["minLength"] == 1
    # ... and enforced as declared.
    assert client.get("/api/v1/trees", params={"widths": "2," * 60}).status_code == 422
    assert client.get("/api/v1/trees", params={"widths": "3,17"}).status_code == 422
    assert client.get("/api/v1/draft-sources", params={"overrides": "eagle:1.5:0.1"}).status_code == 422
    assert client.get("/api/v1/draft-sources", params={"overrides": "eagle:0.8:0.1"}).status_code == 200
    zero = client.get("/api/v1/calibrate/counters", params={"drafts": 0, "draft_tokens": 0, "accepted": 0})
    assert zero.status_code == 422 and zero.json()["detail"][0]["loc"] == ["query", "drafts"]


def test_rules_between_parameters_are_listed_in_the_descriptions() -> None:
    paths = app.openapi()["paths"]
    for path, name in (
        ("/api/v1/simulate", "rho"),
        ("/api/v1/run", "rho"),
        ("/api/v1/bursty", "rho"),
        ("/api/v1/regimes/speedup-vs-batch", "batch"),
        ("/api/v1/regimes/table", "p_step"),
        ("/api/v1/calibrate/length", "length"),
        ("/api/v1/ngram", "draft_order"),
    ):
        description = paths[path]["get"]["description"]
        assert "Rules between parameters" in description and f"`{name}`" in description, path


# ---------------------------------------------------------------------------
# 8. Heavy work


def test_limiter_counts_slots() -> None:
    limiter = HeavyWorkLimiter(2)
    assert limiter.try_acquire() and limiter.try_acquire() and not limiter.try_acquire()
    limiter.release()
    assert limiter.try_acquire()
    with pytest.raises(ValueError):
        HeavyWorkLimiter(0)


def test_busy_worker_answers_heavy_requests_at_once_with_503(client: TestClient) -> None:
    limiter: HeavyWorkLimiter = app.state.heavy_work
    taken = limiter.limit
    limiter.running += taken
    try:
        busy = client.get("/api/v1/simulate", params={"cycles": 2_000_000, "k": 64, "rho": 0.5})
        assert busy.status_code == 503
        assert busy.headers["retry-after"] == "1"
        assert "busy" in busy.json()["detail"]
        assert client.get("/api/v1/speedup").status_code == 200
        assert client.get("/healthz").status_code == 200
    finally:
        limiter.running -= taken
    assert client.get("/api/v1/simulate", params={"cycles": 1000}).status_code == 200


def test_heavy_operations_document_503() -> None:
    heavy = heavy_operations(app)
    assert ("GET", "/api/v1/simulate") in heavy and ("GET", "/api/v1/trees") in heavy
    assert ("GET", "/api/v1/speedup") not in heavy
    paths = app.openapi()["paths"]
    for method, path in heavy:
        assert "Retry-After" in paths[path][method.lower()]["responses"]["503"]["headers"]


def test_heavy_handlers_are_routes() -> None:
    simulate = [route for route in api_routes(app.routes) if route.path == "/api/v1/simulate"]
    assert len(simulate) == 1 and isinstance(simulate[0], APIRoute)
