from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, Page, expect

from app.model import closed_form as cf
from app.model.presets import ACCELERATORS, MODELS
from app.model.regimes import default_setup, devices_to_fit, sweep_batches
from app.web.pages.page_format import js_fixed
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


# ---------------------------------------------------------------------------
# Server-rendered first paint: the section's numbers with JavaScript off, and the script showing the same


FIRST_PAINT_STATE = {
    "rg_hw": "mi300x",
    "rg_model": "mixtral-8x7b",
    "rg_hw_bandwidth_tb_s": "6",
    "rg_context": "2048",
    "rg_p": "0.7",
    "rg_k": "3",
    "rg_batch": "100",  # the slider's log steps make it 97
    "rg_regime_a": "roofline",
    "rg_batch_a": "8",
    "rg_regime_b": "linear",
    "rg_beta_b": "0.25",
    "rg_c": "0.2",
}
READOUT_IDS = [
    "p-value",
    "k-value",
    "batch-value",
    "speedup",
    "best-k",
    "crossover",
    "best-crossover",
    "draft-cost",
    "verify-cost",
    "step",
    "bound",
    "memory",
    "devices-used",
]


def first_paint_url(live_server: str) -> str:
    return live_server + "/?" + urlencode(FIRST_PAINT_STATE)


def section_texts(page: Page) -> dict[str, str]:
    """Every number the section shows outside the chart, and its controls' values."""
    texts = {name: page.text_content(f"#rg-{name}") or "" for name in READOUT_IDS}
    for name in ("schedule", "table-a", "table-b", "table-summary"):
        texts[name] = page.inner_text(f"#rg-{name}")
    controls = ", ".join(
        f"{form} {tag}" for form in ("#rg-controls", "#rg-table-controls") for tag in ("select", "input")
    )
    controls += ", .regimes-sliders input"
    texts["controls"] = json.dumps(
        page.eval_on_selector_all(controls, "(nodes) => nodes.map((n) => [n.id, n.value, n.hidden])")
    )
    texts["colours"] = json.dumps(
        page.eval_on_selector_all(
            ".rg-table td", "(cells) => cells.map((c) => [c.className, getComputedStyle(c).backgroundColor])"
        )
    )
    texts["open"] = json.dumps(page.eval_on_selector_all("details.rg-fields", "(nodes) => nodes.map((n) => n.open)"))
    texts["links"] = json.dumps(
        page.eval_on_selector_all("#regimes a[download]", "(links) => links.map((a) => a.href)")
    )
    return texts


def test_first_paint_without_javascript_shows_the_apis_numbers(
    browser: Browser, live_server: str, client: TestClient
) -> None:
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(first_paint_url(live_server))
    setup = {"hw": "mi300x", "model": "mixtral-8x7b", "hw_bandwidth_tb_s": 6, "context": 2048}
    table_params = {"regime_a": "roofline", "batch_a": 8, "regime_b": "linear", "beta_b": 0.25, "c": 0.2}
    sweep = client.get(
        "/api/v1/regimes/speedup-vs-batch", params={**setup, "p": 0.7, "k": 3, "batch": 97, "k_max": 12}
    ).json()
    schedule = client.get("/api/v1/regimes/schedule", params={**setup, "p": 0.7, "k_max": 8}).json()
    table = client.get("/api/v1/regimes/table", params={**setup, **table_params, "p": 0.7, "k": 3, "k_max": 8}).json()
    point = sweep["current"]
    expected = {
        "p-value": "0.70",
        "k-value": "3",
        "batch-value": "97",
        "speedup": f"{js_fixed(point['speedup'], 2)}×",
        "best-k": f"{point['best_k']} ({js_fixed(point['best_speedup'], 2)}×)" if point["best_k"] else "off",
        "crossover": str(sweep["crossover_batch"] or f"pays to {sweep['batch_max']}"),
        "best-crossover": str(sweep["best_crossover_batch"] or f"pays to {sweep['batch_max']}"),
        "draft-cost": js_fixed(point["draft_cost"], 2),
        "verify-cost": js_fixed(point["verification_cost"], 2),
        "step": f"{js_fixed(point['target_step_ms'], 2)} ms plain, {js_fixed(point['verify_step_ms'], 2)} ms verifying",
        "bound": "compute-bound" if point["verify_compute_bound"] else "memory-bound",
    }
    for name, text in expected.items():
        expect(page.locator(f"#rg-{name}")).to_have_text(text)
    capacity = sweep["setup"]["memory_capacity_gb"]
    expect(page.locator("#rg-memory")).to_contain_text(
        f"{js_fixed(point['memory_needed_gb'], 1)} / {js_fixed(capacity, 0)} GB"
    )
    devices = f"{sweep['setup']['devices']} × {sweep['setup']['accelerator']['name']}"
    expect(page.locator("#rg-devices-used")).to_contain_text(devices)
    # controls carry the URL's state
    assert page.input_value("#rg-hw") == "mi300x" and page.input_value("#rg-model") == "mixtral-8x7b"
    assert (
        page.input_value("#rg-batch") == "66"
        and page.input_value("#rg-k") == "3"
        and page.input_value("#rg-p") == "0.7"
    )
    assert page.input_value("#rg-hw_bandwidth_tb_s") == "6" and page.input_value("#rg-context") == "2048"
    assert page.get_attribute("#rg-hw-fields", "open") is not None
    assert page.locator("#rg-beta_b").is_visible() and not page.locator("#rg-beta_a").is_visible()
    # the schedule, row by row
    rows = page.locator("#rg-schedule tbody tr")
    expect(rows).to_have_count(len(schedule["steps"]))
    for index, step in enumerate(schedule["steps"]):
        cells = rows.nth(index).locator("td")
        assert cells.nth(1).inner_text() == (str(step["k"]) if step["k"] else "off")
        assert cells.nth(0).inner_text().startswith(str(step["batch_from"]))
        assert (
            cells.nth(2).inner_text()
            == f"{js_fixed(step['speedup_at_from'], 2)}× → {js_fixed(step['speedup_at_to'], 2)}×"
        )
    # the two tables side by side, coloured
    for side in ("a", "b"):
        regime = table[f"regime_{side}"]
        expect(page.locator(f"#rg-table-{side} caption")).to_have_text(
            f"{regime['label']}, c = {js_fixed(regime['draft_cost'], 3)}"
        )
        cells = page.locator(f"#rg-table-{side} tbody td")
        values = [value for row in table[f"speedup_{side}"] for value in row]
        assert cells.all_inner_texts() == [js_fixed(value, 2) for value in values]
        wins = page.locator(f"#rg-table-{side} td.rg-win")
        expect(wins).to_have_count(sum(value > 1 for value in values))
        expect(page.locator(f"#rg-table-{side} td.rg-loss")).to_have_count(sum(value < 1 for value in values))
        if wins.count():
            assert wins.first.evaluate("(cell) => getComputedStyle(cell).backgroundColor").startswith(
                "rgba(46, 139, 87"
            )
    boxes = [page.locator(f"#rg-table-{side}").bounding_box() for side in ("a", "b")]
    assert boxes[0] and boxes[1] and boxes[1]["x"] > boxes[0]["x"] + boxes[0]["width"] - 1  # side by side
    expect(page.locator("td.rg-highlight")).to_have_count(2 if table["highlight"] else 0)
    if table["highlight"]:
        expect(page.locator("#rg-table-summary")).to_contain_text(f"{table['win_to_loss_cells']} cells flip")
    # the chart stays the script's, and nothing ran
    expect(page.locator("#regimes-chart .plot-container")).to_have_count(0)
    assert page.get_attribute("#regimes-chart", "data-ready") is None
    context.close()


@pytest.mark.parametrize(
    "state",
    [
        FIRST_PAINT_STATE,
        {},
        {"rg_model": "dense-70b", "rg_context": "0", "rg_p": "0.5", "rg_regime_b": "roofline", "rg_batch_b": "1024"},
    ],
    ids=["edited", "defaults", "speculation-off"],
)
def test_the_script_takes_over_showing_the_first_paints_numbers(
    browser: Browser, live_server: str, state: dict[str, str]
) -> None:
    url = live_server + "/?" + urlencode(state)
    static = browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 900})
    static_page = static.new_page()
    static_page.goto(url)
    painted = section_texts(static_page)
    static.close()
    assert painted["speedup"].endswith("×") and painted["table-a"].count("\n") >= 10
    scripted = browser.new_context(viewport={"width": 1200, "height": 900})
    page = scripted.new_page()
    open_regimes(page, url)
    wait_until(page, "document.getElementById('rg-tables').dataset.ready === '1'", 30)
    drawn = section_texts(page)
    scripted.close()
    assert drawn == painted
