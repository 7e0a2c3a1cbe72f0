"""The decision section in a real browser: calibration form, draft sources and trees."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, Page, expect

from app.model import calibration, closed_form, draft_sources
from tests.conftest import PageWatch
from tests.support import wait_until

pytestmark = pytest.mark.browser

UPDATE_MS = 20_000  # the machine running the suite may be busy: allow slow redraws
CHARTS = ("calibration-chart", "positions-chart", "sources-chart", "trees-chart", "trees-speedup-chart")
ALL_READY = " && ".join(f"document.getElementById('{chart}')?.dataset.ready === '1'" for chart in CHARTS)


def open_decision(page: Page, url: str) -> None:
    page.goto(url)
    wait_until(page, ALL_READY, timeout=60)


def renders(page: Page, chart: str) -> int:
    count: str | None = page.evaluate(f"document.getElementById('{chart}').dataset.renders")
    return int(count or 0)


def url_state(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def assert_clean(watch: PageWatch) -> None:
    assert watch.console_errors == []
    assert watch.foreign_requests == []


def test_section_opens_on_a_calibrated_example(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decision(page, live_server + "/")
    scrape = page.input_value("#cal-metrics")
    assert "vllm:spec_decode_num_drafts_total" in scrape
    expected = httpx.post(live_server + "/api/v1/calibrate/metrics", content=scrape).json()
    expect(page.locator("#cal-p")).to_have_text(f"{expected['acceptance']:.3f}")
    expect(page.locator("#cal-best-k")).to_have_text(str(expected["best_k"]))
    expect(page.locator("#cal-positions tbody tr")).to_have_count(5)
    expect(page.locator("#cal-iid")).to_contain_text("i.i.d.")
    expect(page.locator("#sources-table tbody tr")).to_have_count(len(draft_sources.SOURCE_IDS))
    expect(page.locator("#trees-summary")).to_contain_text("A chain never yields more than 2.50")
    assert page.locator("#calibration-error").is_hidden()
    assert_clean(watch)


def test_pasting_a_scrape_calibrates_it(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decision(page, live_server + "/")
    page.fill("#cal-metrics", calibration.example_exposition(0.65, 3, drafts=100_000, engines=2))
    page.click("#cal-submit")
    expect(page.locator("#cal-p")).to_have_text("0.650", timeout=UPDATE_MS)
    expect(page.locator("#cal-positions tbody tr")).to_have_count(3)
    best, speed = closed_form.best_k(0.65, 0.15, 16)
    expect(page.locator("#cal-best-k")).to_have_text(str(best))
    expect(page.locator("#cal-best-speedup")).to_have_text(f"{speed:.2f}×")
    assert_clean(watch)


def test_a_bad_scrape_shows_the_api_message(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decision(page, live_server + "/")
    for text, fragment in [
        ("hello world", "not a Prometheus text exposition"),
        ("process_cpu_seconds_total 3\n", "no vLLM spec-decode counters"),
        ("", "empty"),
    ]:
        page.fill("#cal-metrics", text)
        page.click("#cal-submit")
        expect(page.locator("#calibration-error")).to_contain_text(fragment, timeout=UPDATE_MS)
        expect(page.locator("#calibration-error")).to_be_visible()
    page.click("#cal-example")
    expect(page.locator("#calibration-error")).to_be_hidden(timeout=UPDATE_MS)
    # The only console noise allowed is the browser reporting the three 422 responses.
    assert len(watch.console_errors) == 3
    assert all("422" in message for message in watch.console_errors)
    assert watch.foreign_requests == []


def test_rate_mode_keeps_its_state_in_the_url(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decision(page, live_server + "/")
    page.check("#cal-mode-rate")
    expect(page.locator("#cal-metrics")).to_be_hidden()
    page.fill("#cal-rate", "0.5")
    page.fill("#cal-k", "4")
    page.click("#cal-submit")
    p = closed_form.acceptance_from_draft_rate(0.5, 4)
    expect(page.locator("#cal-p")).to_have_text(f"{p:.3f}", timeout=UPDATE_MS)
    state = url_state(page)
    assert state["cal_mode"] == ["rate"] and state["cal_rate"] == ["0.5"] and state["cal_k"] == ["4"]
    page.reload()
    wait_until(page, ALL_READY, timeout=60)
    assert page.is_checked("#cal-mode-rate")
    expect(page.locator("#cal-p")).to_have_text(f"{p:.3f}")
    expect(page.locator("#cal-json")).to_have_attribute(
        "href", "/api/v1/calibrate/rate?c=0.15&regime=memory-bound&k_max=16&rate=0.5&k=4"
    )
    assert_clean(watch)


def test_cost_regime_reaches_every_part(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decision(page, live_server + "/?cal_mode=length&cal_length=3&cal_k=4")
    before = {chart: renders(page, chart) for chart in ("calibration-chart", "sources-chart", "trees-speedup-chart")}
    page.select_option("#dec-regime", "compute-bound")
    expect(page.locator("#cal-best-k")).to_have_text("off", timeout=UPDATE_MS)
    wait_until(
        page, " && ".join(f"Number(document.getElementById('{c}').dataset.renders) > {n}" for c, n in before.items())
    )
    assert url_state(page)["dec_regime"] == ["compute-bound"]
    expect(page.locator("#dec-beta")).to_be_hidden()
    page.select_option("#dec-regime", "linear")
    expect(page.locator("#dec-beta")).to_be_visible()
    assert_clean(watch)


def test_editing_a_draft_source(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decision(page, live_server + "/")
    before = renders(page, "sources-chart")
    page.fill("#src-ngram-p", "0.9")
    wait_until(page, f"Number(document.getElementById('sources-chart').dataset.renders) > {before}")
    expect(page.locator('#sources-table tr[data-id="ngram"]')).to_have_class("edited", timeout=UPDATE_MS)
    assert url_state(page)["src_edit"] == ["ngram:0.9:0.0123"]
    best = closed_form.best_k(0.9, 0.0123, 16)
    expect(page.locator('#sources-table tr[data-id="ngram"] [data-key="best-k"]')).to_have_text(str(best[0]))
    page.click("#sources-reset")
    expect(page.locator('#sources-table tr[data-id="ngram"]')).not_to_have_class("edited", timeout=UPDATE_MS)
    citations = page.text_content("#sources-citations") or ""
    assert "arXiv:2401.07851" in citations and "arXiv:2401.15077" in citations
    assert_clean(watch)


def test_trees_follow_the_budget_and_refuse_bad_acceptance(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decision(page, live_server + "/?tree_budget=16")
    points: int = page.evaluate("document.getElementById('trees-chart').data[0].x.length")
    assert points == 17
    page.focus("#tree-budget")
    page.keyboard.press("End")
    wait_until(page, "document.getElementById('trees-chart').data[0].x.length === 257", timeout=60)
    assert url_state(page)["tree_budget"] == ["256"]
    page.fill("#tree-acceptance", "0.2,0.5")
    expect(page.locator("#trees-error")).to_contain_text("must not increase", timeout=UPDATE_MS)
    page.fill("#tree-acceptance", "0.5,0.3")
    expect(page.locator("#trees-error")).to_be_hidden(timeout=UPDATE_MS)
    expect(page.locator("#trees-summary")).to_contain_text("a binary tree 5.00")
    assert len(watch.console_errors) == 1 and "422" in watch.console_errors[0]
    assert watch.foreign_requests == []


def test_section_is_usable_on_a_phone(page: Page, live_server: str, watch: PageWatch) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    open_decision(page, live_server + "/")
    width: int = page.evaluate("document.getElementById('decision').scrollWidth")
    assert width <= 390
    for label_for in ("dec-c", "dec-regime", "cal-metrics", "tree-acceptance", "tree-budget"):
        assert page.locator(f'label[for="{label_for}"]').count() == 1
    assert_clean(watch)


# ---------------------------------------------------------------------------
# First paint: the numbers are in the HTML before any script runs, and the script keeps them

SHARED_STATE = (
    "/?dec_regime=linear&dec_beta=0.2&dec_kmax=12&cal_mode=rate&cal_rate=0.5&cal_k=4"
    "&src_edit=ngram:0.9:0.0123&tree_p=0.5,0.3,0.1&tree_budget=32"
)
READOUTS = ("cal-p", "cal-best-k", "cal-best-speedup", "cal-observed", "cal-iid", "trees-summary")
CONTROLS = ("dec-c", "dec-regime", "dec-beta", "dec-batch", "dec-kmax", "cal-rate", "cal-length", "cal-k")


def without_javascript(browser: Browser, url: str) -> Page:
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(url)
    return page


def key_numbers(page: Page) -> dict[str, object]:
    """Every server-rendered number of the section, as a person or a test would read it."""
    numbers: dict[str, object] = {name: page.text_content(f"#{name}") for name in READOUTS}
    numbers["controls"] = [page.input_value(f"#{name}") for name in (*CONTROLS, "tree-acceptance", "tree-budget")]
    numbers["mode"] = page.locator('input[name="cal-mode"]:checked').get_attribute("value")
    numbers["sources"] = page.locator("#sources-table tbody [data-key]").all_text_contents()
    numbers["source inputs"] = [field.input_value() for field in page.locator("#sources-table tbody input").all()]
    numbers["edited"] = page.locator("#sources-table tr.edited").evaluate_all("rows => rows.map(r => r.dataset.id)")
    numbers["positions"] = page.locator("#cal-positions tbody td").all_text_contents()
    numbers["citations"] = page.locator("#sources-citations li").all_text_contents()
    numbers["links"] = [page.get_attribute(f"#{name}", "href") for name in ("cal-json", "sources-json", "trees-json")]
    return numbers


def test_first_paint_without_javascript_shows_the_api_numbers(
    browser: Browser, live_server: str, client: TestClient
) -> None:
    page = without_javascript(browser, live_server + SHARED_STATE)
    cost = {"regime": "linear", "beta": 0.2, "k_max": 12}
    calibrated = client.get("/api/v1/calibrate/rate", params={**cost, "c": 0.15, "rate": 0.5, "k": 4}).json()
    sources = client.get("/api/v1/draft-sources", params={**cost, "overrides": "ngram:0.9:0.0123"}).json()
    tree_params = {"regime": "linear", "beta": 0.2, "c": 0.15, "acceptance": "0.5,0.3,0.1", "budget": 32}
    tree = client.get("/api/v1/trees", params=tree_params).json()
    expect(page.locator("#cal-p")).to_have_text(f"{calibrated['acceptance']:.3f}")
    expect(page.locator("#cal-best-k")).to_have_text(str(calibrated["best_k"]))
    expect(page.locator("#cal-best-speedup")).to_have_text(f"{calibrated['best_speedup']:.2f}×")
    observed = f"{calibrated['mean_acceptance_length']:.2f} / {calibrated['draft_acceptance_rate']:.2f}"
    expect(page.locator("#cal-observed")).to_have_text(observed)
    expect(page.locator("#cal-iid")).to_have_text(
        "Measured at k = 4. " + "A single rate or length cannot test independence: the i.i.d. model is assumed."
    )
    # Per-k predictions, which the chart shows once scripts run.
    speedups = page.locator("#cal-predictions tbody td:nth-child(4)").all_text_contents()
    assert speedups == [f"{row['speedup']:.2f}×" for row in calibrated["predictions"]]
    # Controls hold the URL's state; fields of other modes and regimes are hidden.
    assert page.input_value("#dec-regime") == "linear" and page.input_value("#dec-beta") == "0.2"
    assert page.is_checked("#cal-mode-rate") and page.input_value("#cal-rate") == "0.5"
    expect(page.locator("#dec-batch")).to_be_hidden()
    expect(page.locator("#cal-metrics")).to_be_hidden()
    # Draft sources in the API's order, with their accepted length per unit of draft cost and citations.
    rows = page.locator("#sources-table tbody tr")
    expect(rows).to_have_count(len(draft_sources.SOURCE_IDS))
    for index, source in enumerate(sources["sources"]):
        row = rows.nth(index)
        assert row.get_attribute("data-id") == source["id"]
        expect(row.locator('[data-key="per-cost"]')).to_have_text(f"{source['accepted_per_draft_cost']:.2f}")
        expect(row.locator('[data-key="best-k"]')).to_have_text(str(source["best_k"]))
        expect(row.locator('[data-key="best-speedup"]')).to_have_text(f"{source['best_speedup']:.2f}×")
    expect(page.locator('#sources-table tr[data-id="ngram"]')).to_have_class("edited")
    assert page.input_value("#src-ngram-p") == "0.9"
    citations = page.locator("#sources-citations li")
    expect(citations).to_have_count(len(draft_sources.SOURCE_IDS))
    assert "arXiv:2401.07851" in (page.text_content("#sources-citations") or "")
    # Trees: the summary line with the best tree and the bounds.
    expect(page.locator("#trees-summary")).to_contain_text(
        f"Best: {tree['best_family']} with {tree['best_budget']} drafted tokens per step, {tree['best_speedup']:.2f}×"
    )
    expect(page.locator("#trees-summary")).to_contain_text(
        f"A chain never yields more than {tree['chain_bound']:.2f} tokens per step, "
        f"a binary tree {tree['binary_tree_bound']:.2f}"
    )
    for name in ("calibration-error", "sources-error", "trees-error"):
        expect(page.locator(f"#{name}")).to_be_hidden()
    assert page.locator("#calibration-chart *").count() == 0  # charts wait for the script
    page.context.close()


def test_first_paint_without_javascript_calibrates_the_example_scrape(
    browser: Browser, live_server: str, client: TestClient
) -> None:
    page = without_javascript(browser, live_server + "/")
    scrape = page.input_value("#cal-metrics")
    assert "vllm:spec_decode_num_accepted_tokens_per_pos_total" in scrape
    expected = client.post("/api/v1/calibrate/metrics", content=scrape).json()
    expect(page.locator("#cal-p")).to_have_text(f"{expected['acceptance']:.3f}")
    expect(page.locator("#cal-best-k")).to_have_text(str(expected["best_k"]))
    expect(page.locator("#cal-best-speedup")).to_have_text(f"{expected['best_speedup']:.2f}×")
    expect(page.locator("#cal-positions tbody tr")).to_have_count(len(expected["positions"]))
    expect(page.locator("#cal-iid")).to_contain_text("Acceptance looks i.i.d.")
    page.context.close()


@pytest.mark.parametrize(
    "query", ["/", SHARED_STATE, "/?cal_mode=length&cal_length=3.1&dec_regime=roofline&dec_batch=64"]
)
def test_the_script_keeps_the_first_paint(
    browser: Browser, page: Page, live_server: str, watch: PageWatch, query: str
) -> None:
    static = without_javascript(browser, live_server + query)
    before = key_numbers(static)
    static.context.close()
    open_decision(page, live_server + query)
    assert key_numbers(page) == before
    assert_clean(watch)


def test_inconsistent_state_shows_the_api_message_before_the_script(browser: Browser, live_server: str) -> None:
    page = without_javascript(browser, live_server + "/?cal_mode=length&cal_length=9&cal_k=3&tree_p=0.2,0.5")
    expect(page.locator("#calibration-error")).to_have_text("length: must be from 1 to k + 1 = 4 at k = 3; got 9.0")
    expect(page.locator("#trees-error")).to_contain_text("must not increase")
    expect(page.locator("#cal-p")).to_have_text("–")
    page.context.close()
