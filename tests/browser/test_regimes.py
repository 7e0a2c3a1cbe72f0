from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from app import closed_form as cf
from app.presets import ACCELERATORS, MODELS
from app.regimes import default_setup, devices_to_fit, sweep_batches
from tests.conftest import PageWatch
from tests.support import wait_until

pytestmark = pytest.mark.browser

UPDATE_MS = 20_000  # the machine running the suite may be busy: allow slow redraws
CHART_READY = "document.getElementById('regimes-chart')?.dataset.ready === '1'"
TRACE_NAMES = "Array.from(document.getElementById('regimes-chart').data, (t) => t.name)"


def open_regimes(page: Page, url: str) -> None:
    page.goto(url)
    wait_until(page, CHART_READY, timeout=60)


def chart_key(page: Page) -> str:
    key: str = page.evaluate("document.getElementById('regimes-chart').dataset.key")
    return key


def trace_names(page: Page) -> list[str]:
    names: list[str] = page.evaluate(TRACE_NAMES)
    return names


def url_state(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def table_caption(page: Page, side: str) -> str:
    return page.text_content(f"#rg-table-{side} caption") or ""


def assert_clean(watch: PageWatch) -> None:
    assert watch.console_errors == []
    assert watch.foreign_requests == []


def expected_crossover(**changes: object) -> int | None:
    setup = dataclasses.replace(default_setup(), **changes)  # type: ignore[arg-type]
    setup = dataclasses.replace(setup, devices=devices_to_fit(setup) or 64)
    return sweep_batches(0.8, 4, setup, 1024, 12).crossover_batch


def test_defaults_draw_chart_readouts_schedule_and_table(page: Page, live_server: str, watch: PageWatch) -> None:
    open_regimes(page, live_server + "/")
    names = trace_names(page)
    assert "speedup at k = 4" in names and "best k at each batch" in names
    assert "break-even (S = 1)" in names and "batch 1" in names
    crossover = expected_crossover()
    assert crossover is not None
    assert f"crossover at batch {crossover}" in names
    expect(page.locator("#rg-crossover")).to_have_text(str(crossover), timeout=UPDATE_MS)
    expect(page.locator("#rg-verify-cost")).to_have_text(
        "1.00", timeout=UPDATE_MS
    )  # batch one, dense: verification is free
    assert page.evaluate("document.getElementById('regimes-chart').layout.xaxis.type") == "log"
    break_even: list[float] = page.evaluate(
        "document.getElementById('regimes-chart').data.find((t) => t.name.startsWith('break-even')).y"
    )
    assert break_even == [1, 1]
    assert page.locator("#rg-schedule tbody tr").count() >= 2
    assert page.locator("#rg-table-a tbody tr").count() == 10
    assert page.locator("#rg-table-a tbody tr").first.locator("td").count() == 8
    assert table_caption(page, "a").startswith("memory-bound (v = 1)")
    assert table_caption(page, "b").startswith("compute-bound (v = k + 1)")
    assert page.locator("#rg-table-a td.rg-win").count() > 70
    assert page.locator("#rg-table-b td.rg-loss").count() == 80
    assert page.locator("td.rg-highlight").count() == 2
    expect(page.locator("#rg-table-summary")).to_contain_text("win", timeout=UPDATE_MS)
    first_cell = page.text_content("#rg-table-a tbody tr:first-child td") or ""
    assert first_cell == f"{cf.speedup(0.5, 1, 0.15):.2f}"
    # the demo section keeps working and its state is untouched
    expect(page.locator("#speedup")).to_have_text("1.82×", timeout=UPDATE_MS)
    assert_clean(watch)


def test_switching_regime_redraws_chart_and_table(page: Page, live_server: str, watch: PageWatch) -> None:
    open_regimes(page, live_server + "/")
    before_table = page.inner_text("#rg-table-b")
    page.select_option("#rg-regime_b", "linear")
    expect(page.locator("#rg-table-b caption")).to_contain_text("linear (v = 1 + 0.5 k)", timeout=UPDATE_MS)
    wait_until(page, timeout=20, expression=f"{TRACE_NAMES}.some((name) => name.startsWith('right: linear'))")
    assert page.inner_text("#rg-table-b") != before_table
    expect(page.locator("#rg-beta_b")).to_be_visible(timeout=UPDATE_MS)
    assert url_state(page)["rg_regime_b"] == ["linear"]
    page.fill("#rg-beta_b", "0.25")
    expect(page.locator("#rg-table-b caption")).to_contain_text("linear (v = 1 + 0.25 k)", timeout=UPDATE_MS)
    value = cf.speedup(0.5, 1, 0.15, lambda k: 1 + 0.25 * k)
    expect(page.locator("#rg-table-b tbody tr:first-child td").first).to_have_text(f"{value:.2f}", timeout=UPDATE_MS)
    page.select_option("#rg-regime_a", "roofline")
    expect(page.locator("#rg-table-a caption")).to_contain_text("roofline: H100 SXM", timeout=UPDATE_MS)
    expect(page.locator("#rg-batch_a")).to_be_visible(timeout=UPDATE_MS)
    assert_clean(watch)


def test_switching_presets_redraws_chart_and_table(page: Page, live_server: str, watch: PageWatch) -> None:
    open_regimes(page, live_server + "/?rg_regime_a=roofline&rg_batch_a=1")
    expect(page.locator("#rg-table-a caption")).to_contain_text("H100 SXM, Dense 8B", timeout=UPDATE_MS)
    before_key, before_table = chart_key(page), page.inner_text("#rg-table-a")
    page.select_option("#rg-hw", "b200")
    page.select_option("#rg-model", "dense-70b")
    wait_until(page, "document.getElementById('regimes-chart').dataset.key.startsWith('b200|dense-70b')", 30)
    assert chart_key(page) != before_key
    expect(page.locator("#rg-table-a caption")).to_contain_text("B200 (HGX), Dense 70B", timeout=UPDATE_MS)
    assert page.inner_text("#rg-table-a") != before_table
    crossover = expected_crossover(accelerator=ACCELERATORS["b200"], target=MODELS["dense-70b"])
    expect(page.locator("#rg-crossover")).to_have_text(str(crossover), timeout=UPDATE_MS)
    state = url_state(page)
    assert state["rg_hw"] == ["b200"] and state["rg_model"] == ["dense-70b"]
    assert page.input_value("#rg-model_total_params_b") == "70.6"
    assert_clean(watch)


def test_editing_a_preset_field_and_the_batch_slider(page: Page, live_server: str, watch: PageWatch) -> None:
    open_regimes(page, live_server + "/")
    page.click("#rg-hw-fields summary")
    page.fill("#rg-hw_bandwidth_tb_s", "6.7")
    wait_until(page, "new URLSearchParams(location.search).get('rg_hw_bandwidth_tb_s') === '6.7'", 30)
    accelerator = dataclasses.replace(ACCELERATORS["h100-sxm"], bandwidth_tb_s=6.7)
    crossover = expected_crossover(accelerator=accelerator)
    expect(page.locator("#rg-crossover")).to_have_text(str(crossover), timeout=UPDATE_MS)
    page.fill("#rg-batch", "60")  # slider position 60 -> batch 2^6
    expect(page.locator("#rg-batch-value")).to_have_text("64", timeout=UPDATE_MS)
    wait_until(page, timeout=20, expression=f"{TRACE_NAMES}.includes('batch 64')")
    assert url_state(page)["rg_batch"] == ["64"]
    page.select_option("#rg-weights", "fp8")
    wait_until(page, "new URLSearchParams(location.search).get('rg_weights') === 'fp8'", 30)
    expect(page.locator("#rg-memory")).to_contain_text("/ 80 GB", timeout=UPDATE_MS)
    assert_clean(watch)


def test_state_in_the_url_is_restored(page: Page, live_server: str, watch: PageWatch) -> None:
    open_regimes(page, live_server + "/?rg_hw=mi300x&rg_model=mixtral-8x7b&rg_batch=16&rg_p=0.7&rg_k=3&k=2")
    assert page.input_value("#rg-hw") == "mi300x"
    assert page.input_value("#rg-model") == "mixtral-8x7b"
    assert page.input_value("#rg-k") == "3"
    expect(page.locator("#rg-batch-value")).to_have_text("16", timeout=UPDATE_MS)
    expect(page.locator("#rg-p-value")).to_have_text("0.70", timeout=UPDATE_MS)
    assert page.input_value("#k") == "2"  # the demo keeps its own k
    verify = float(page.text_content("#rg-verify-cost") or "0")
    assert verify > 1.0  # MoE: five tokens read more experts than one
    assert_clean(watch)


def test_schedule_and_table_download(page: Page, live_server: str, watch: PageWatch, tmp_path: Path) -> None:
    open_regimes(page, live_server + "/?rg_model=dense-70b&rg_context=0")
    expect(page.locator("#rg-schedule tbody tr").last).to_contain_text("off", timeout=UPDATE_MS)
    with page.expect_download() as csv_download:
        page.click("#rg-schedule-csv")
    assert csv_download.value.suggested_filename == "speculation-schedule.csv"
    csv_path = tmp_path / "schedule.csv"
    csv_download.value.save_as(csv_path)
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    with page.expect_download() as json_download:
        page.click("#rg-schedule-json")
    json_path = tmp_path / "schedule.json"
    json_download.value.save_as(json_path)
    body = json.loads(json_path.read_text())
    assert body["setup"]["target"]["key"] == "dense-70b" and body["setup"]["context_tokens"] == 0
    assert [(int(row["batch_from"]), int(row["k"])) for row in rows] == [
        (step["batch_from"], step["k"]) for step in body["steps"]
    ]
    assert rows[-1]["k"] == "0"
    assert page.locator("#rg-schedule tbody tr").count() == len(rows)
    api = httpx.get(live_server + "/api/v1/regimes/schedule", params={"model": "dense-70b", "context": 0, "k_max": 8})
    assert api.json()["steps"] == body["steps"]
    with page.expect_download() as table_download:
        page.click("#rg-table-csv")
    table_path = tmp_path / "table.csv"
    table_download.value.save_as(table_path)
    assert table_path.read_text().startswith("regime,label,p,k=1,")
    assert_clean(watch)


def test_a_bad_edit_shows_the_api_message(page: Page, live_server: str) -> None:
    open_regimes(page, live_server + "/?rg_model=mixtral-8x7b")
    page.click("#rg-model-fields summary")
    page.fill("#rg-model_experts_per_token", "4")
    expect(page.locator("#rg-error")).to_be_visible(timeout=UPDATE_MS)
    expect(page.locator("#rg-error")).to_contain_text("model_experts_per_token", timeout=UPDATE_MS)
    page.fill("#rg-model_experts_per_token", "2")
    expect(page.locator("#rg-error")).to_be_hidden(timeout=UPDATE_MS)


def test_section_fits_a_phone(browser: Browser, live_server: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    open_regimes(page, live_server + "/")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1
    context.close()
