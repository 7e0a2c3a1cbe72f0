"""One plan per request: decided once; the config, the rules and the dashboard agree at every batch."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.model import engines, rules
from app.model.cost import capacity
from app.service import plan
from app.service.regimes import SetupRequest, build_setup
from tests.planned import evaluate, expression

APP = Path(__file__).resolve().parents[2] / "app"
PROFILE = (0.95, 0.9, 0.5, 0.2)  # a measured profile whose i.i.d. p schedules another k at many batches
SETUPS = {
    "default": SetupRequest(),
    "70b": SetupRequest(model="dense-70b", draft="dense-1b", devices=0),
}


@pytest.fixture
def decide_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every call of capacity.decide while the test runs."""
    calls: list[tuple[Any, ...]] = []
    real: Callable[..., capacity.Decision] = capacity.decide

    def counted(*args: Any, **kwargs: Any) -> capacity.Decision:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(capacity, "decide", counted)
    return calls


def test_nothing_in_the_app_imports_decide_by_name() -> None:
    """So that counting capacity.decide counts every decision (a name imported early would escape the count)."""
    for path in APP.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "app.model.cost.capacity":
                assert "decide" not in {alias.name for alias in node.names}, path


@pytest.mark.parametrize(
    "query",
    [
        "",  # the example scrape: a measured profile
        "engine=sglang&batch=4",
        "engine=llamacpp&mode=rate&rate=0.6&k=4",
        "engine=trtllm&model=dense-70b&draft=dense-1b&devices=0",
    ],
)
def test_one_decide_view_decides_once(client: TestClient, decide_calls: list[tuple[Any, ...]], query: str) -> None:
    response = client.get(f"/api/v1/views/decide?{query}")
    assert response.status_code == 200, response.text
    assert len(decide_calls) == 1


@pytest.mark.parametrize("endpoint", ["engine-config", "rules", "dashboard"])
def test_each_endpoint_decides_once(client: TestClient, decide_calls: list[tuple[Any, ...]], endpoint: str) -> None:
    response = client.get(f"/api/v1/{endpoint}?engine=vllm&p=0.8&profile=0.95,0.9,0.5,0.2")
    assert response.status_code == 200, response.text
    assert len(decide_calls) == 1


def _schedule_k(made: rules.RulesFile, batch: int) -> int:
    return round(evaluate(expression(made, rules.SCHEDULE_K), {rules.SCHEDULE_BATCH: float(batch)}))


def _dashboard_rows(board: dict[str, Any]) -> dict[int, int]:
    """The k the dashboard's About panel says the config runs, per batch."""
    about = next(panel for panel in board["panels"] if panel.get("type") == "text")["options"]["content"]
    shown: dict[int, int] = {}
    for first, last, k in re.findall(r"^\| (\d+)-(\d+) \| (\d+) \|", about, re.M):
        for batch in range(int(first), int(last) + 1):
            shown[batch] = int(k)
    return shown


@pytest.mark.parametrize("setup", SETUPS)
@pytest.mark.parametrize("profile", [(), PROFILE], ids=["iid", "profile"])
@pytest.mark.parametrize("engine", engines.ENGINES)
def test_config_rules_and_dashboard_agree_at_every_batch(engine: str, profile: tuple[float, ...], setup: str) -> None:
    built = build_setup(SETUPS[setup])
    made = plan.build(plan.PlanRequest(engine=engine, p=0.8, profile=profile, k_max=8), built)
    config = made.config_out()
    limit = made.decision.batch_limit
    assert limit > 1 and len(config.engine_k_by_batch) == limit
    try:
        watched = made.rules
    except rules.RulesError as error:  # a version without Prometheus series says so; the newest has them
        pytest.fail(f"{engine}: {error}")
    assert list(watched.engine_k) == config.engine_k_by_batch
    assert watched.decision is made.decision
    board = _dashboard_rows(made.dashboard)
    for batch in range(1, limit + 1):
        k = config.engine_k_by_batch[batch - 1]
        assert _schedule_k(watched, batch) == k, (engine, batch)
        assert board[batch] == k, (engine, batch)
    # where the engine takes the schedule per batch, what it runs is the schedule, except where its reading differs
    differs = set(config.differs_at)
    for batch, (run, best) in enumerate(zip(config.engine_k_by_batch, made.decision.best_k, strict=True), start=1):
        assert (run != best) == (batch in differs), (engine, batch)


def test_a_profile_changes_the_schedule_of_the_rules_as_of_the_config() -> None:
    """The case that once disagreed: rules decided at the i.i.d. p while the config followed the profile."""
    built = build_setup(SetupRequest())
    with_profile = plan.build(plan.PlanRequest(engine="vllm", p=0.8, profile=PROFILE), built)
    iid = plan.build(plan.PlanRequest(engine="vllm", p=0.8), built)
    assert with_profile.iid.batches, "the profile should schedule another k than the i.i.d. model somewhere"
    changed = with_profile.iid.batches[0]
    assert _schedule_k(with_profile.rules, changed) != _schedule_k(iid.rules, changed)
    assert _schedule_k(with_profile.rules, changed) == with_profile.config_out().engine_k_by_batch[changed - 1]


def test_the_api_serves_the_plans_rules_and_links_agree(client: TestClient) -> None:
    query = "engine=vllm&p=0.8&profile=0.95,0.9,0.5,0.2&model=dense-70b&draft=dense-1b"
    config = client.get(f"/api/v1/engine-config?{query}").json()
    served = client.get(f"/api/v1/rules?{query}").json()
    assert served["engine_k_by_batch"] == config["engine_k_by_batch"]
    view = client.get(f"/api/v1/views/decide?{query}").json()
    linked = {name: client.get(view["links"][name]) for name in ("config", "rules", "dashboard", "schedule")}
    assert all(response.status_code == 200 for response in linked.values()), linked
    ks = linked["config"].json()["engine_k_by_batch"]
    assert view["config"]["text"] == linked["config"].json()["text"]
    assert view["watch"]["rules_text"] == linked["rules"].text
    assert ks == client.get(view["links"]["rules"].replace("&format=yaml", "")).json()["engine_k_by_batch"]
    # the schedule the page links to is the plan's, measured profile included (once it was the i.i.d. one)
    assert "profile=" in view["links"]["schedule"]
    assert linked["schedule"].json()["steps"] == linked["config"].json()["schedule"]["steps"]
    shown = [row["cells"][1]["text"] for row in view["schedule"]["table"]["rows"]]
    assert shown == [str(step["k"]) if step["k"] else "off" for step in linked["schedule"].json()["steps"]]
    iid = client.get("/api/v1/regimes/schedule?p=0.8&k_max=8&model=dense-70b&draft=dense-1b").json()
    assert iid["steps"] != linked["schedule"].json()["steps"]


def test_the_request_writes_its_own_query() -> None:
    request = plan.PlanRequest(engine="sglang", p=0.7, profile=(0.9, 0.5), method="EAGLE3", batch=4, p_low=0.6)
    query = request.query()
    assert query.startswith("engine=sglang&p=0.7&k_max=8&profile=0.9,0.5")
    assert "batch=4" in query and "method=EAGLE3" in query and "p_low" not in query
    assert "p_low=0.6" in request.query(watch=True)


def test_data_parallel_ranks_reach_the_config_the_rules_and_the_links() -> None:
    # vllm/config/vllm.py @ 000fc94b754f _maybe_disable_dynamic_sd_for_data_parallel: above one rank vLLM runs
    # num_speculative_tokens at every batch, so the rules hold the server to that one k
    built = build_setup(SetupRequest(model="dense-70b"))
    one = plan.build(plan.PlanRequest(engine="vllm", p=0.8, batch=4, draft_path="d"), built)
    two = plan.build(plan.PlanRequest(engine="vllm", p=0.8, batch=4, draft_path="d", data_parallel=2), built)
    assert len(set(one.config_out().engine_k_by_batch)) > 1
    runs = two.config_out().engine_k_by_batch
    assert set(runs) == {one.decision.best_k[3]} and list(two.rules.engine_k) == runs
    assert "data_parallel=2" in two.request.query() and "data_parallel" not in one.request.query()


def test_a_block_drafter_is_priced_as_one_pass_by_the_config_the_rules_and_the_links(client: TestClient) -> None:
    """vLLM's dflash drafts all k in one pass (speculative.py @ 002e77c1f0ef sets parallel_drafting for it): the
    plan prices it so whatever the setup's drafting says, and every twin it links to answers the same schedule."""
    query = "engine=vllm&p=0.8&k_max=8&method=dflash&draft_path=org/dflash&draft=eagle3"
    config = client.get(f"/api/v1/engine-config?{query}").json()
    assert any("proposes all k tokens in one pass" in note for note in config["notes"])
    parallel = client.get(f"/api/v1/engine-config?{query.replace('dflash', 'eagle3')}&drafting=parallel").json()
    chain = client.get(f"/api/v1/engine-config?{query.replace('dflash', 'eagle3')}").json()
    assert config["schedule"]["steps"] == parallel["schedule"]["steps"] != chain["schedule"]["steps"]
    assert config["engine_k_by_batch"][0] > chain["engine_k_by_batch"][0]
    assert parallel["config"]["parallel_drafting"] is True and "parallel_drafting" not in config["config"]
    view = client.get(f"/api/v1/views/decide?{query}").json()  # the page's example profile, not p = 0.8
    linked = client.get(view["links"]["config"]).json()
    schedule = client.get(view["links"]["schedule"]).json()
    assert "drafting=parallel" in view["links"]["schedule"] and schedule["steps"] == linked["schedule"]["steps"]
    rules_k = client.get(view["links"]["rules"].replace("&format=yaml", "")).json()["engine_k_by_batch"]
    assert rules_k == linked["engine_k_by_batch"] and linked["engine_k_by_batch"][0] == 8


def test_a_parallel_draft_an_engine_cannot_run_is_said() -> None:
    built = build_setup(SetupRequest(draft="eagle3", drafting="parallel"))
    sglang = plan.build(plan.PlanRequest(engine="sglang", p=0.8, method="EAGLE3"), built).config_out()
    said = "which SGLang's config here has no setting for: its EAGLE3 drafts so only where its draft checkpoint does"
    assert any(said in note and "DFLASH, DSPARK, UNO" in note for note in sglang.notes)
    block = plan.build(plan.PlanRequest(engine="sglang", p=0.8, method="DFLASH"), built).config_out()
    assert not any("no setting for" in note for note in block.notes)


def test_a_p_eagle_head_drafts_in_one_pass_and_vllm_runs_it_as_eagle3_with_parallel_drafting() -> None:
    built = build_setup(SetupRequest(draft="p-eagle"))
    assert built.setup.parallel_draft and built.description.parallel_draft and built.setup.draft.layers == 4
    config = plan.build(plan.PlanRequest(engine="vllm", p=0.8, draft_path="amazon/p-eagle"), built).config_out()
    assert config.config is not None
    assert config.config["method"] == "eagle3" and config.config["parallel_drafting"] is True
    sglang = plan.build(plan.PlanRequest(engine="sglang", p=0.8), built).config_out()
    assert any("P-EAGLE head, which SGLang's config here cannot run" in note for note in sglang.notes)
