"""GET /draft-sources (app/web/api/routes/sources.py): draft sources side by side over HTTP, with the 422
discipline (moved from tests/test_routers_decision.py with the route)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.model.arithmetic import draft_sources

SOURCES = "/api/v1/draft-sources"


# ---------------------------------------------------------------------------
# Draft sources


def test_draft_sources(client: TestClient) -> None:
    body = client.get(SOURCES, params={"k_max": 12}).json()
    assert {row["id"] for row in body["sources"]} == set(draft_sources.SOURCE_IDS)
    speedups = [row["best_speedup"] for row in body["sources"]]
    assert speedups == sorted(speedups, reverse=True)
    assert body["best_source"] == body["sources"][0]["id"]
    for row in body["sources"]:
        assert "arXiv:2401.07851" in row["measurement"]
        assert len(row["speedups"]) == 13
        assert row["speedup_at_reference"] == pytest.approx(row["measured_speedup"], rel=1e-9)
    assert "tokens per unit of the whole cycle's cost" in body["derivation"]


def test_draft_source_overrides(client: TestClient) -> None:
    body = client.get(SOURCES, params={"overrides": "ngram:0.9:0.01"}).json()
    ngram = next(row for row in body["sources"] if row["id"] == "ngram")
    assert ngram["edited"] is True and ngram["acceptance"] == 0.9 and ngram["draft_cost"] == 0.01
    assert body["best_source"] == "ngram"


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [("gpt:0.5:0.1", "unknown draft source gpt"), ("eagle:2:0.1", "acceptance of eagle"), ("eagle", "id:acceptance")],
)
def test_draft_source_override_errors(client: TestClient, overrides: str, fragment: str) -> None:
    response = client.get(SOURCES, params={"overrides": overrides})
    assert response.status_code == 422
    [item] = response.json()["detail"]
    assert item["loc"] == ["query", "overrides"] and fragment in item["msg"]
