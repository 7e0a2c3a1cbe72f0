"""The batch outputs agree with memory: nothing past the largest batch that fits."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.model.cost.capacity import max_batch_that_fits
from app.model.cost.regimes import memory_capacity_gb, memory_needed_gb
from app.service.regimes import SetupRequest, build_setup

REGIMES = "/api/v1/regimes"


def test_largest_batch_that_fits_is_the_products_own_count() -> None:
    for model, draft in (("dense-8b", "dense-1b"), ("dense-70b", "dense-1b"), ("mixtral-8x7b", "dense-8b")):
        setup = build_setup(SetupRequest(model=model, draft=draft)).setup
        fit = max_batch_that_fits(setup, 1024)
        assert memory_needed_gb(setup, fit) <= memory_capacity_gb(setup)
        assert fit == 1024 or memory_needed_gb(setup, fit + 1) > memory_capacity_gb(setup)


def test_70b_schedule_stops_at_the_44_sequences_that_fit(client: TestClient) -> None:
    body = client.get(f"{REGIMES}/schedule", params={"model": "dense-70b", "p": 0.8}).json()
    assert body["setup"]["devices"] == 2 and body["setup"]["devices_auto"] is True
    assert body["max_batch_that_fits"] == 44 == body["batch_limit"]
    assert body["steps"][-1]["batch_to"] == 44
    assert all(int(start) <= 44 for start in body["thresholds"])
    assert body["off_from_batch"] is None
    assert "44 sequences fit" in body["headline"] and "fewest" in body["headline"]


def test_mixtral_says_it_loses_at_batch_one_and_marks_agree_with_memory(client: TestClient) -> None:
    params = {"model": "mixtral-8x7b", "draft": "dense-8b", "p": 0.8, "k": 4}
    sweep = client.get(f"{REGIMES}/speedup-vs-batch", params=params).json()
    fit = sweep["max_batch_that_fits"]
    assert fit == 188
    assert sweep["first_loss_batch"] == 1
    assert sweep["crossover_batch"] is None or sweep["crossover_batch"] <= fit
    assert "loses already at batch 1" in sweep["headline"]
    schedule = client.get(f"{REGIMES}/schedule", params={k: v for k, v in params.items() if k != "k"}).json()
    assert schedule["loses_at_batch_one"] is True and schedule["steps"][0]["k"] == 0
    assert schedule["steps"][-1]["batch_to"] == fit
    assert schedule["headline"].startswith("Speculation loses already at batch 1")


def test_nothing_fits_is_said_plainly(client: TestClient) -> None:
    body = client.get(f"{REGIMES}/schedule", params={"model": "dense-405b", "devices": 1}).json()
    assert body["max_batch_that_fits"] == 0 and body["steps"] == [] and body["headline"].startswith("Nothing fits")
