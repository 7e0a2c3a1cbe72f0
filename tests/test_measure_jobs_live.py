"""POST /api/v1/measure against real llama-servers, through the real app under uvicorn: a batch sweep as a job
whose progress and partial table grow while it runs, which can be cancelled, and whose servers may die."""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.service.clients.measure import parse_metrics
from tests.live_engine import COPY_PROMPT, Server, llama_server
from tests.support import free_port, start_server, stop_server

K = 8
SLOTS = ["--parallel", "2"]
NGRAM = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1", "--spec-ngram-simple-size-m", str(K)]


@pytest.fixture(scope="module")
def app_url() -> Iterator[str]:
    port = free_port()
    process = start_server(port, {"SPECDEC_ALLOW_MEASURE": "true"})
    yield f"http://127.0.0.1:{port}"
    stop_server(process)


@contextlib.contextmanager
def _servers() -> Iterator[tuple[Server, Server]]:
    with llama_server(SLOTS) as plain, llama_server([*SLOTS, *NGRAM]) as ngram:
        yield plain, ngram


def _start(app_url: str, servers: str, prompts: str = "", **query: Any) -> dict[str, Any]:
    response = httpx.post(
        f"{app_url}/api/v1/measure", params={"servers": servers, **query}, content=prompts.encode(), timeout=30.0
    )
    assert response.status_code == 202, response.text
    job: dict[str, Any] = response.json()
    return job


def _poll(app_url: str, job_id: str, until: float) -> list[dict[str, Any]]:
    """Every view of the job until it finishes (or ``until`` seconds pass)."""
    views = []
    end = time.monotonic() + until
    while time.monotonic() < end:
        view = httpx.get(f"{app_url}/api/v1/measure/{job_id}", timeout=10.0).json()
        views.append(view)
        if view["state"] != "running":
            break
        time.sleep(0.2)
    return views


def _first_cells(app_url: str, job_id: str) -> dict[str, Any]:
    """The job once it has measured a cell."""
    end = time.monotonic() + 300.0
    while time.monotonic() < end:
        view: dict[str, Any] = httpx.get(f"{app_url}/api/v1/measure/{job_id}", timeout=10.0).json()
        if view["cells"] or view["state"] != "running":
            return view
        time.sleep(0.2)
    raise AssertionError(f"no cell measured in 300 s: {view}")


def test_a_job_shows_its_progress_and_cells_while_it_runs_and_ends_with_the_report(app_url: str) -> None:
    with _servers() as (plain, ngram):
        before = parse_metrics(ngram.metrics())
        prompts = f"{COPY_PROMPT.replace(chr(10), ' ')}\nExplain in plain words why the sky is blue."
        job = _start(app_url, f"{plain.url}, {ngram.url}", prompts, batches="1,2", n_predict=16, repeats=2)
        assert job["state"] == "running" and job["batches"] == [1, 2]
        assert {server["url"] for server in job["servers"]} == {plain.url, ngram.url}
        views = _poll(app_url, job["id"], 600.0)
        after = parse_metrics(ngram.metrics())
    final = views[-1]
    assert final["state"] == "done", final["error"]
    fractions = [view["fraction"] for view in views]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    partial = [view for view in views if view["state"] == "running" and view["cells"]]
    assert partial and all(len(view["cells"]) < len(final["cells"]) for view in partial)  # the table grew
    assert len(final["cells"]) == 2 * 2 * 2  # servers x batches x rounds
    by_k = {server["url"]: server["k"] for server in final["servers"]}
    assert by_k == {plain.url: 0, ngram.url: K}
    # the engine's own counters: every draft the job counted happened on the server during the job
    counted = sum(cell["drafts"] for cell in final["cells"] if cell["url"] == ngram.url)
    assert 0 < counted <= after.minus(before).drafts
    assert all(cell["drafts"] == 0 for cell in final["cells"] if cell["url"] == plain.url)
    report = final["report"]
    assert {(cell["k"], cell["batch"]) for cell in report["cells"]} == {(0, 1), (0, 2), (K, 1), (K, 2)}
    assert [item["k"] for item in report["crossover"]] == [K]
    assert {server["engine"] for server in report["servers"]} == {"llamacpp"}
    assert report["workload"]["prompts"] == 2  # the body's two lines, not the four built-in prompts
    config = report["engine_config"]  # the measured schedule in the measured engine's config
    assert config["engine"] == "llamacpp" and config["method"] == "ngram-simple" and config["version"], config


def test_a_cancelled_job_keeps_its_cells_and_a_dead_server_is_named(app_url: str) -> None:
    with _servers() as (plain, ngram):
        job = _start(app_url, f"{plain.url} {ngram.url}", batches="1,2", n_predict=16, repeats=200)
        assert _first_cells(app_url, job["id"])["state"] == "running"
        cancelled = httpx.post(f"{app_url}/api/v1/measure/{job['id']}/cancel", timeout=10.0)
        assert cancelled.status_code == 200
        final = _poll(app_url, job["id"], 120.0)[-1]
        assert final["state"] == "cancelled" and final["cells"]
        assert "cancelled before" in (final["error"] or "")
        # a server that dies mid-sweep: the job stops naming it, with the cells measured before kept
        job = _start(app_url, f"{plain.url},{ngram.url}", batches="1,2", n_predict=16, repeats=200)
        assert _first_cells(app_url, job["id"])["state"] == "running"
        ngram.process.kill()  # a crash: its connections close at once
        final = _poll(app_url, job["id"], 120.0)[-1]
    assert final["state"] in ("incomplete", "failed") and final["cells"]
    assert ngram.url in (final["error"] or "")


@pytest.mark.browser
def test_the_decide_page_measures_with_a_progress_bar_and_shows_the_result(app_url: str, browser: object) -> None:
    from playwright.sync_api import Browser

    assert isinstance(browser, Browser)
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    try:
        page.goto(f"{app_url}/decide")
        page.fill("#measure-servers", "http://127.0.0.1:9")  # one server: refused, naming the on-screen label
        page.click("#measure-start")
        page.wait_for_selector("#measure-error:not([hidden])")
        assert page.text_content("#measure-error").startswith("Servers: from 2 to 8 servers")  # type: ignore[union-attr]
        with _servers() as (plain, ngram):
            page.fill("#measure-servers", f"{plain.url} {ngram.url}")
            page.fill("#measure-batches", "1,2")
            page.fill("#measure-n_predict", "16")
            page.fill("#measure-method", "ngram-simple")  # the drafter, typed as llama-server names it
            page.click("#measure-start")
            page.wait_for_selector("#measure-progress:not([hidden])")
            assert page.is_hidden("#measure-error")
            values = []
            end = time.monotonic() + 300
            while time.monotonic() < end and not page.is_visible("#measure-result"):
                values.append(float(page.eval_on_selector("#measure-bar", "bar => bar.value")))
                time.sleep(0.25)
        assert page.is_visible("#measure-result"), page.text_content("#measure")
        assert values == sorted(values) and any(0 < value < 1 for value in values)  # it moved while it ran
        assert float(page.eval_on_selector("#measure-bar", "bar => bar.value")) == 1.0
        rows = page.locator("#measure-speedups tbody tr")
        assert rows.count() == 2  # k = 8 at batches 1 and 2
        speedup = rows.first.locator("td").nth(2).text_content() or ""
        assert re.fullmatch(r"\d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\]", speedup), speedup  # two rounds: an interval
        assert f"k = {K}" in (page.text_content("#measure-crossover") or "")
        assert page.is_visible("#measure-config-box")  # the measured schedule as llama-server takes it
        assert "config for the measured schedule (llama.cpp" in (page.text_content("#measure-config-title") or "")
        written = page.text_content("#measure-config-text") or ""
        if written == "(nothing to write: see the notes)":  # no measured batch paid: the notes say to run without
            notes = page.text_content("#measure-config-notes") or ""
            assert "speculation paid at none of the batches measured (1, 2)" in notes, notes
        else:
            assert written.startswith("llama-server -m ") and "--spec-type ngram-simple" in written, written
        assert page.is_hidden("#measure-cancel")
    finally:
        page.close()
