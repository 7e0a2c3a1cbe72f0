"""A fifth engine is one module and one registry line: a stand-in engine registered at run time goes through
the plan, the API's engine-config, rules and dashboard, the command line, and both watches (its /metrics, and a
real Prometheus with and without its rules loaded), with no other change to the product."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from app.model import engines, rules
from app.model.arithmetic import closed_form
from app.model.counters.counts import SpecCounts
from app.model.engines.base import (
    ConfigRequest,
    DecodeTime,
    EngineAdapter,
    EngineVersion,
    Exported,
    LiveFormat,
    RulesMetrics,
    Source,
    runs_of,
)
from app.model.engines.live import samples, summed
from app.service import plan
from app.service.regimes import SetupRequest, build_setup

VERSION = EngineVersion(
    name="2026-12",
    released="2026-12",
    change="a stand-in written for this test",
    sources=(Source("example/toyserve", "toyserve/spec.py", "2026-12", "the schedule file"),),
)


def _write(request: ConfigRequest, version: EngineVersion) -> Exported:
    schedule = [[first, last, k] for first, last, k in runs_of(request.best_k)]
    text = json.dumps({"draft_schedule": schedule})
    return Exported({"draft_schedule": schedule}, [f"--draft-schedule={text}"], text)


def _read(exported: Exported, version: EngineVersion, batch_limit: int) -> list[int]:
    """The stand-in's own reading: the k of the range that holds the batch, 0 past the last range."""
    assert exported.config is not None
    ranges = exported.config["draft_schedule"]
    return [next((k for first, last, k in ranges if first <= batch <= last), 0) for batch in range(1, batch_limit + 1)]


def _counts(text: str) -> SpecCounts | None:
    """The stand-in's counters, as measure reads them between requests."""
    read = samples(text, "toyserve_", "ToyServe")
    drafts = summed(read, "toyserve_drafts_total")
    if drafts is None:
        return None
    tokens, accepted = summed(read, "toyserve_draft_tokens_total"), summed(read, "toyserve_accepted_tokens_total")
    return SpecCounts(int(drafts), int(tokens or 0), int(accepted or 0), ())


TOYSERVE = EngineAdapter(
    NAME="toyserve",
    TITLE="ToyServe",
    VERSIONS=(VERSION,),
    ALIASES={},
    METHODS=("draft_model",),
    REPORTS=(),
    STEP_TIMES=(),
    TREE=None,
    RULES_METRICS={
        "2026-12": RulesMetrics(
            running="toyserve_running_requests",
            drafts="toyserve_drafts_total",
            draft_tokens="toyserve_draft_tokens_total",
            accepted="toyserve_accepted_tokens_total",
        )
    },
    HOW_TO_APPLY="write the schedule with specdec-lab config --engine toyserve",
    DECODE_TIME=DecodeTime(missing="ToyServe exports no decode-time series: a canary cannot be compared"),
    LIVE=LiveFormat(
        engine="toyserve",
        title="ToyServe",
        metrics_path="/metrics",
        marker="toyserve_",
        native=False,
        counts=_counts,
        k_of=lambda text, counts: None,
        sources=VERSION.sources,
    ),
    write_config=_write,
    read_config=_read,
    choose_method=lambda given: given,
)


@pytest.fixture
def toyserve(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setitem(engines.ADAPTERS, "toyserve", TOYSERVE)
    monkeypatch.setattr(engines, "ENGINES", (*engines.ENGINES, "toyserve"))
    yield "toyserve"


def test_the_stand_in_is_one_record_of_the_typed_base() -> None:
    assert isinstance(TOYSERVE, EngineAdapter)
    assert TOYSERVE.METHOD_ALIAS == "" and TOYSERVE.WATCHED == ()  # what an engine need not name has a default


def test_the_plan_writes_reads_back_and_watches_a_registered_engine(toyserve: str) -> None:
    made = plan.build(plan.PlanRequest(engine=toyserve, p=0.8, profile=(0.95, 0.9, 0.5)), build_setup(SetupRequest()))
    config = made.config_out()
    assert config.engine == toyserve and config.engine_version == "2026-12"
    assert config.engine_k_by_batch == made.decision.best_k and config.differs_at == []
    assert config.sources == ["example/toyserve: toyserve/spec.py as of 2026-12 (the schedule file)"]
    assert list(made.rules.engine_k) == made.decision.best_k
    assert "toyserve_drafts_total" in made.rules.text and "ToyServe" in made.rules.text
    assert "ToyServe 2026-12" in json.dumps(made.dashboard)


def test_the_command_line_takes_a_registered_engine(toyserve: str, capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    assert main(["config", "--engine", toyserve, "--p", "0.8", "--format", "json"]) == 0
    config = json.loads(capsys.readouterr().out)
    assert config["engine"] == toyserve and config["config"]["draft_schedule"][0][2] == config["engine_k_by_batch"][0]
    assert main(["rules", "--engine", toyserve, "--p", "0.8"]) == 0
    assert "toyserve_drafts_total" in capsys.readouterr().out
    assert main(["dashboard", "--engine", toyserve, "--p", "0.8"]) == 0
    assert "ToyServe" in capsys.readouterr().out


def test_the_api_serves_a_registered_engine(client: TestClient, toyserve: str) -> None:
    config = client.get(f"/api/v1/engine-config?engine={toyserve}&p=0.8")
    assert config.status_code == 200, config.text
    assert config.json()["config"]["draft_schedule"][0][2] == config.json()["engine_k_by_batch"][0]
    rules_file = client.get(f"/api/v1/rules?engine={toyserve}&p=0.8&format=yaml")
    assert rules_file.status_code == 200, rules_file.text
    assert yaml.safe_load(rules_file.text)["groups"][0]["name"] == "specdec-lab-toyserve"
    board = client.get(f"/api/v1/dashboard?engine={toyserve}&p=0.8")
    assert board.status_code == 200 and "toyserve" in board.text
    assert client.get("/api/v1/engine-config?engine=toyserve2&p=0.8").status_code == 422


def test_the_decide_page_offers_and_takes_a_registered_engine(client: TestClient, toyserve: str) -> None:
    page = client.get("/decide")
    assert page.status_code == 200 and '<option value="toyserve"' in page.text and ">ToyServe</option>" in page.text
    chosen = client.get(f"/decide?engine={toyserve}")
    assert chosen.status_code == 200 and '<option value="toyserve" selected' in chosen.text
    view = client.get(f"/api/v1/views/decide?engine={toyserve}")
    assert view.status_code == 200, view.text
    assert view.json()["config"]["engine"] == "ToyServe" and "draft_schedule" in view.json()["config"]["text"]
    assert client.get("/api/v1/views/decide?engine=toyserve2").status_code == 422


def test_the_command_lines_engine_choices_list_a_registered_engine(toyserve: str) -> None:
    from app.cli import build_parser

    parser = build_parser()
    commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    for command in ("config", "rules", "dashboard"):
        engine = next(action for action in commands.choices[command]._actions if action.dest == "engine")
        assert engine.choices is not None and toyserve in engine.choices, command
        assert "toyserve" in commands.choices[command].format_help(), command


# ---------------------------------------------------------------------------
# The watches: ToyServe's /metrics counts drafts, drafted and accepted tokens, and the running requests

P, K, BATCH, RATE = 0.8, 4, 8, 200.0  # acceptance, draft length, running requests, drafts per second


def toyserve_metrics(seconds: float) -> str:
    """ToyServe's /metrics after ``seconds`` of RATE drafts per second of K tokens at i.i.d. acceptance P."""
    drafts = RATE * seconds
    counters = {
        "toyserve_drafts": drafts,
        "toyserve_draft_tokens": drafts * K,
        "toyserve_accepted_tokens": drafts * (closed_form.expected_tokens(P, K) - 1.0),
    }
    lines = ["# TYPE toyserve_running_requests gauge", f'toyserve_running_requests{{model_name="m"}} {BATCH}.0']
    for name, value in counters.items():
        lines += [f"# TYPE {name} counter", f'{name}_total{{model_name="m"}} {value!r}']
    return "\n".join(lines) + "\n"


def _measured_lines(out: str, count: int) -> list[str]:
    lines = [line for line in out.splitlines() if line.startswith("interval")]
    assert len(lines) == count, out
    assert all(f"p {P:.3f}" in line and f"k {K}" in line and f"batch {BATCH}" in line for line in lines), out
    return lines


def test_the_metrics_watch_reads_a_registered_engine(toyserve: str, capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main
    from tests.test_prometheus_live import serving

    with serving(toyserve_metrics) as address:
        code = main(["watch", f"http://{address}/metrics", "--interval", "0.5", "--samples", "2"])
    assert code == 0
    _measured_lines(capsys.readouterr().out, 2)


def test_the_prometheus_watch_reads_a_registered_engine(
    toyserve: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With its rules loaded the watch reads what they record; without, it evaluates their expressions."""
    from app.cli import main
    from tests.test_prometheus_live import instant, prometheus, serving, wait_for

    assert main(["rules", "--engine", toyserve, "--p", str(P), "--window", "10s", "--hold", "5s"]) == 0
    text = capsys.readouterr().out
    recorded = f'{rules.TOKENS}{{{rules.RULES_LABEL}="{toyserve}"}}'
    with serving(toyserve_metrics) as address:
        for loaded in ([text], []):
            with prometheus({toyserve: [address]}, loaded) as url:
                wait_for(lambda: bool(instant(url, "up == 1")), 30, "ToyServe scraped")
                if loaded:
                    wait_for(lambda: bool(instant(url, recorded)), 30, "ToyServe's rules recording")
                time.sleep(5)  # more than one interval of data
                assert main(["watch", "--prometheus", url, "--interval", "2", "--samples", "2"]) == 0
                out = capsys.readouterr().out
                assert f"watching {toyserve} 2026-12" in out, out
                if loaded:
                    assert f"recorded by the specdec-lab rules ({rules.RULES_LABEL}={toyserve})" in out, out
                else:
                    assert "rules are not loaded in this Prometheus (or not per instance and model_name)" in out, out
                    assert "evaluating the expressions of their recording rules" in out, out
                _measured_lines(out, 2)
