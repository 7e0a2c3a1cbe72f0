"""The decision section in a real browser: calibration form, draft sources and trees."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Page, expect

from app import calibration, closed_form, draft_sources
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
