"""GET /trees (app/web/api/routes/trees.py): chains against trees over HTTP, with the 422 discipline (moved
from tests/test_routers_decision.py with the route)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.model.arithmetic import closed_form, trees

TREES = "/api/v1/trees"


def messages(response: object) -> list[str]:
    body = response.json()  # type: ignore[attr-defined]
    return [item["msg"] for item in body["detail"]]


# ---------------------------------------------------------------------------
# Trees


def test_trees(client: TestClient) -> None:
    params = {"acceptance": "0.6,0.2,0.1", "budget": 32, "c": 0.05, "widths": "2,3", "regime": "memory-bound"}
    body = client.get(TREES, params=params).json()
    names = [family["name"] for family in body["families"]]
    assert names == [
        "chain",
        "2-ary tree",
        "2 independent sequences",
        "3-ary tree",
        "3 independent sequences",
        "best-speedup tree",
    ]
    assert body["chain_bound"] == pytest.approx(2.5)
    assert body["binary_tree_bound"] == pytest.approx(5.0)
    optimal = trees.optimal_tree_values((0.6, 0.2, 0.1), 32)
    assert body["optimal_values"] == pytest.approx(list(optimal))
    chain = body["families"][0]
    assert chain["values"][10] == pytest.approx(closed_form.expected_tokens(0.6, 10))
    assert chain["speedups"][10] == pytest.approx(closed_form.speedup(0.6, 10, 0.05))
    for family in body["families"]:
        assert all(o >= v - 1e-12 for o, v in zip(body["optimal_values"], family["values"], strict=True))
    shape = body["optimal_shape"]
    assert len(shape["parents"]) == body["best_budget"]


def test_largest_tree_request_is_served(client: TestClient) -> None:
    params = {"acceptance": ",".join(["0.06"] * 16), "budget": trees.MAX_TREE_BUDGET, "widths": "2,4,8,16"}
    response = client.get(TREES, params=params)
    assert response.status_code == 200
    assert len(response.json()["optimal_values"]) == trees.MAX_TREE_BUDGET + 1


@pytest.mark.parametrize(
    ("params", "name", "fragment"),
    [
        ({"acceptance": "0.2,0.5"}, "acceptance", "must not increase"),
        ({"acceptance": "0.7,0.6"}, "acceptance", "sum to at most 1"),
        ({"acceptance": ""}, "acceptance", "at least one"),
        ({"acceptance": "a,b"}, "acceptance", "comma-separated numbers"),
        ({"acceptance": "inf"}, "acceptance", "finite"),
        ({"acceptance": ",".join(["0.01"] * 17)}, "acceptance", "at most 16"),
        ({"budget": 257}, "budget", "from 0 to 256"),
        ({"widths": "1"}, "widths", "from 2 to 16"),
        ({"widths": "2.5"}, "widths", "integer"),
        ({"widths": "2,3,4,5,6"}, "widths", "at most 4"),
    ],
)
def test_trees_422(client: TestClient, params: dict[str, object], name: str, fragment: str) -> None:
    response = client.get(TREES, params=params)
    assert response.status_code == 422
    assert any(message.startswith(name) and fragment in message for message in messages(response)), messages(response)
