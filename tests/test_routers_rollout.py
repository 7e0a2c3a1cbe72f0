"""POST /api/v1/rollout/plan: the rollout plan of a pasted scrape with several classes, its body bounded."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.model import rollout_plan
from app.model.calibration import MAX_EXPOSITION_BYTES
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
