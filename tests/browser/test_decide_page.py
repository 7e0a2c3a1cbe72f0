"""The decide page in a real browser: first paint from the view, updates from new views, states, layout."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, Route, expect

from app.model.arithmetic import closed_form, draft_sources
from app.model.counters import calibration
from tests.conftest import PageWatch
from tests.samples import engine_reports
from tests.support import wait_until

pytestmark = pytest.mark.browser

UPDATE_MS = 20_000  # the machine running the suite may be busy: allow slow redraws
CHARTS = ("calibration", "positions", "sources", "schedule", "trees", "trees_speedup")
ALL_READY = "document.body.dataset.ready === '1' && " + " && ".join(
    f"document.getElementById('{chart}')?.dataset.ready === '1'" for chart in CHARTS
)
READOUTS = ("cal-p", "cal-best-k", "cal-best-speedup", "cal-observed", "cal-iid", "sources-summary")
SUMMARIES = ("schedule-summary", "trees-summary")
VIEW = "/api/v1/views/decide"
LEGACY = (
    "/?dec_regime=linear&dec_beta=0.2&dec_kmax=12&cal_mode=rate&cal_rate=0.5&cal_k=4"
    "&src_edit=ngram:0.9:0.0123&tree_p=0.5,0.3,0.1&tree_budget=32"
)


def open_decide(page: Page, url: str) -> None:
    page.goto(url)
    wait_until(page, ALL_READY, timeout=60)


def open_other_options(page: Page) -> None:
    """Unfold the draft sources and trees, folded under "other options" below the verdict."""
    if not page.evaluate("document.getElementById('other-options').open"):
        page.click("#other-options > summary")
    expect(page.locator("#sources-table")).to_be_visible()


def url_state(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def view_requests(page: Page) -> list[tuple[str, str | None]]:
    """Every request the page makes for its view: (url, body)."""
    seen: list[tuple[str, str | None]] = []
    page.on("request", lambda request: VIEW in request.url and seen.append((request.url, request.post_data)))
    return seen


def shown(page: Page) -> dict[str, Any]:
    """What the page shows of its view."""
    numbers: dict[str, Any] = {name: page.text_content(f"#{name}") for name in (*READOUTS, *SUMMARIES)}
    numbers["sources"] = {
        row.get_attribute("data-id"): row.locator("td[data-text]").all_text_contents()
        for row in page.locator("#sources-table tbody tr").all()
    }
    numbers["positions"] = page.locator("#cal-positions tbody td").all_text_contents()
    numbers["schedule"] = page.locator("#schedule-table tbody tr").all_text_contents()
    return numbers


def expected(body: dict[str, Any]) -> dict[str, Any]:
    """The same, as the view says it."""
    cal = body["calibration"]
    numbers: dict[str, Any] = {
        "cal-p": cal["p"],
        "cal-best-k": cal["best_k"],
        "cal-best-speedup": cal["best_speedup"],
        "cal-observed": cal["observed"],
        "cal-iid": cal["verdict"],
        "sources-summary": body["sources"]["summary"],
        "schedule-summary": body["schedule"]["summary"],
        "trees-summary": body["trees"]["summary"],
    }
    numbers["sources"] = {
        source_id: [row["per_cycle"], row["per_cost"], row["best_k"], row["best_speedup"]]
        for source_id, row in body["sources"]["rows"].items()
    }
    numbers["positions"] = [cell["text"] for row in cal["positions"]["rows"] for cell in row["cells"]]
    numbers["schedule"] = ["".join(cell["text"] for cell in row["cells"]) for row in body["schedule"]["table"]["rows"]]
    return numbers


def assert_clean(watch: PageWatch) -> None:
    assert watch.console_errors == []
    assert watch.foreign_requests == []


@pytest.mark.parametrize("query", ["", "?mode=length&length=3.1&regime=roofline&batch=64&budget=16&eagle_p=0.9"])
def test_first_paint_is_the_view(page: Page, live_server: str, watch: PageWatch, query: str) -> None:
    body = httpx.get(f"{live_server}{VIEW}{query}").json()
    requests = view_requests(page)
    open_decide(page, f"{live_server}/decide{query}")
    assert json.loads(page.text_content("#view-data") or "{}") == body
    assert shown(page) == expected(body)
    figure = page.evaluate("document.getElementById('trees').data.map((trace) => trace.x.length)")
    assert set(figure) >= {body["controls"]["budget"]["value"] + 1}
    assert requests == [], "the first paint needs no request for its view"
    assert page.url == f"{live_server}/decide{query}"
    assert_clean(watch)


def test_first_paint_without_javascript_shows_the_numbers(browser: Browser, live_server: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server + "/decide")
    scrape = page.input_value("#metrics")
    assert "vllm:spec_decode_num_accepted_tokens_per_pos_total" in scrape
    api = httpx.post(live_server + "/api/v1/calibrate/metrics", content=scrape).json()
    twin = httpx.get(live_server + "/api/v1/views/decide").json()
    expect(page.locator("#cal-p")).to_have_text(f"{api['acceptance']:.3f}")
    # the one recommendation is on the user's setup; the generic cost's best k is labelled as such
    expect(page.locator("#cal-best-k")).to_have_text(twin["calibration"]["best_k"])
    expect(page.locator("#cal-generic")).to_contain_text(f"best k {api['best_k']}")
    expect(page.locator("#cal-positions tbody tr")).to_have_count(len(api["positions"]))
    speedups = page.locator("#cal-predictions tbody td:nth-child(4)").all_text_contents()
    assert speedups == [f"{row['speedup']:.2f}×" for row in api["predictions"]]
    expect(page.locator("#sources-table tbody tr")).to_have_count(len(draft_sources.SOURCE_IDS))
    expect(page.locator("#trees-summary")).to_contain_text(
        f"A chain never yields more than {1 / (1 - float(twin['calibration']['p'])):.1f}"
    )
    expect(page.locator("#rate")).to_be_hidden()
    context.close()


def test_a_fresh_load_leaves_the_address_alone(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + "/decide")
    assert urlsplit(page.url).query == ""
    page.fill("#c", "0.2")
    wait_until(page, "location.search === '?c=0.2'")
    page.fill("#c", "0.15")  # back to the default: out of the address again
    wait_until(page, "location.search === ''")
    assert_clean(watch)


def test_an_old_address_opens_here_with_its_state(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + LEGACY)
    assert urlsplit(page.url).path == "/decide"
    assert page.input_value("#regime") == "linear" and page.input_value("#beta") == "0.2"
    assert page.input_value("#mode") == "rate" and page.input_value("#rate") == "0.5"
    assert page.input_value("#ngram_p") == "0.9" and page.input_value("#acceptance") == "0.5,0.3,0.1"
    assert page.input_value("#budget") == "32"
    expect(page.locator("#beta")).to_be_visible()
    expect(page.locator("#batch")).to_be_hidden()
    expect(page.locator("#metrics")).to_be_hidden()
    p = closed_form.acceptance_from_draft_rate(0.5, 4)
    expect(page.locator("#cal-p")).to_have_text(f"{p:.3f}")
    expect(page.locator('tr[data-id="ngram"] .edited')).to_be_visible()
    assert_clean(watch)


def test_rate_mode_keeps_only_its_short_controls_in_the_address(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + "/decide")
    page.select_option("#mode", "rate")
    expect(page.locator("#metrics")).to_be_hidden()  # at once, before any view arrives
    expect(page.locator("#rate")).to_be_visible()
    page.fill("#rate", "0.5")
    page.fill("#k", "4")
    p = closed_form.acceptance_from_draft_rate(0.5, 4)
    expect(page.locator("#cal-p")).to_have_text(f"{p:.3f}", timeout=UPDATE_MS)
    assert url_state(page) == {"mode": ["rate"], "rate": ["0.5"], "k": ["4"]}
    expect(page.locator("#cal-json")).to_have_attribute(
        "href", "/api/v1/calibrate/rate?rate=0.5&k=4&c=0.15&k_max=16&regime=memory-bound"
    )
    page.reload()
    wait_until(page, ALL_READY, timeout=60)
    assert page.input_value("#mode") == "rate"
    expect(page.locator("#cal-p")).to_have_text(f"{p:.3f}")
    assert_clean(watch)


def test_pasting_a_scrape_posts_it_and_keeps_it_out_of_the_address(
    page: Page, live_server: str, watch: PageWatch
) -> None:
    open_decide(page, live_server + "/decide")
    requests = view_requests(page)
    scrape = calibration.example_exposition(0.65, 3, drafts=100_000, engines=2)
    page.fill("#metrics", scrape)
    expect(page.locator("#cal-p")).to_have_text("0.650", timeout=UPDATE_MS)
    expect(page.locator("#cal-positions tbody tr")).to_have_count(3)
    best, speed = closed_form.best_k(0.65, 0.15, 16)
    twin = httpx.post(live_server + "/api/v1/views/decide", json={"metrics": scrape}).json()["calibration"]
    expect(page.locator("#cal-best-k")).to_have_text(twin["best_k"])
    expect(page.locator("#cal-best-speedup")).to_have_text(twin["best_speedup"])
    expect(page.locator("#cal-generic")).to_contain_text(f"best k {best} ({speed:.2f}×)")
    assert urlsplit(page.url).query == ""
    assert len(requests) == 1
    url, body = requests[0]
    assert urlsplit(url).query == "" and json.loads(body or "{}") == {"metrics": scrape, "baseline": ""}
    # The scrape goes with every later view, the cost controls in the address.
    page.fill("#c", "0.1")
    expect(page.locator("#cal-generic")).to_contain_text(
        f"({closed_form.best_k(0.65, 0.1, 16)[1]:.2f}×)", timeout=UPDATE_MS
    )
    assert url_state(page) == {"c": ["0.1"]} and json.loads(requests[-1][1] or "{}")["metrics"] == scrape
    assert_clean(watch)


HIDDEN_RESULTS = (
    "[...document.querySelectorAll('[data-results]')].every((e) => getComputedStyle(e).visibility === 'hidden')"
)


def test_a_bad_scrape_is_named_beside_the_box_and_hides_every_result_and_copy(
    page: Page, live_server: str, watch: PageWatch
) -> None:
    open_decide(page, live_server + "/decide")
    error = page.locator("[data-error]")
    beside = page.locator("#metrics-error")
    for text, fragment in [
        ("hello world", "unknown format"),
        ("process_cpu_seconds_total 3\n", "without speculative-decoding series"),
        (" ", "empty"),
    ]:
        page.fill("#metrics", text)
        expect(error).to_contain_text(fragment, timeout=UPDATE_MS)
        expect(error).to_contain_text("Engine report")
        expect(beside).to_contain_text(fragment)
        expect(page.locator(".control-error")).to_have_count(1)
        expect(page.locator("#calibrate-results")).to_have_class("stale failed")
        assert page.evaluate(HIDDEN_RESULTS), "a result of the refused input is still shown"
        for button in ("#config-copy", "#rules-copy", "#dashboard-copy"):
            expect(page.locator(button)).to_be_disabled()
        assert "metrics-error" in (page.get_attribute("#metrics", "aria-describedby") or "")
    page.click("#load-example")
    expect(error).to_be_hidden(timeout=UPDATE_MS)
    expect(beside).to_have_count(0)
    expect(page.locator("#calibrate-results")).not_to_have_class("stale", timeout=UPDATE_MS)
    expect(page.locator("#calibrate-results")).not_to_have_class("failed")
    expect(page.locator("#config-copy")).to_be_enabled()
    assert page.get_attribute("#metrics", "aria-describedby") == "metrics-help"
    assert page.input_value("#metrics").startswith("# HELP")
    # The only console noise allowed is the browser reporting the three 422 responses.
    assert len(watch.console_errors) == 3 and all("422" in message for message in watch.console_errors)
    assert watch.foreign_requests == []


def test_a_cost_change_reaches_every_step(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + "/decide?mode=length&length=3&k=4")
    before = page.text_content("#sources-summary")
    trees_before = page.text_content("#trees-summary")
    page.select_option("#regime", "compute-bound")
    expect(page.locator("#beta")).to_be_hidden()
    expect(page.locator("#cal-generic")).to_contain_text("best k off", timeout=UPDATE_MS)
    expect(page.locator("#sources-summary")).not_to_have_text(before or "", timeout=UPDATE_MS)
    assert url_state(page)["regime"] == ["compute-bound"]
    # Trees are priced by their own verification cost, the roofline unless the user picks another, and say so.
    expect(page.locator("#trees-summary")).to_have_text(trees_before or "")
    open_other_options(page)
    page.select_option("#tree_regime", "compute-bound")
    expect(page.locator("#trees-summary")).not_to_have_text(trees_before or "", timeout=UPDATE_MS)
    expect(page.locator("#trees-assumption")).to_contain_text("Compute-bound")
    page.select_option("#regime", "linear")
    expect(page.locator("#beta")).to_be_visible()
    assert_clean(watch)


def test_editing_a_draft_source(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + "/decide")
    source = next(source for source in draft_sources.DEFAULT_SOURCES if source.id == "ngram")
    expect(page.locator("#sources-table")).to_be_hidden()  # folded under "other options" until asked for
    open_other_options(page)
    page.fill("#ngram_p", "0.9")
    expect(page.locator('tr[data-id="ngram"] .edited')).to_be_visible(timeout=UPDATE_MS)
    assert url_state(page) == {"ngram_p": ["0.9"]}
    best, speedup = closed_form.best_k(0.9, source.draft_cost, 16)
    expect(page.locator('tr[data-id="ngram"] td[data-text$=".best_k"]')).to_have_text(str(best))
    expect(page.locator('tr[data-id="ngram"] td[data-text$=".best_speedup"]')).to_have_text(f"{speedup:.2f}×")
    page.click("#sources-reset")
    expect(page.locator('tr[data-id="ngram"] .edited')).to_be_hidden(timeout=UPDATE_MS)
    assert urlsplit(page.url).query == ""
    citations = page.text_content("#sources-citations") or ""
    assert "arXiv:2401.07851" in citations and "arXiv:2401.15077" in citations
    assert_clean(watch)


def test_trees_follow_the_budget_and_refuse_bad_acceptance(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + "/decide?budget=16")
    expect(page.locator("#budget")).to_be_visible()  # an address that sets a tree control opens "other options"
    points: int = page.evaluate("document.getElementById('trees').data[0].x.length")
    assert points == 17
    page.focus("#budget")
    page.keyboard.press("End")
    expect(page.locator("#budget-value")).to_have_text("256")
    wait_until(page, "document.getElementById('trees').data[0].x.length === 257", timeout=60)
    assert url_state(page)["budget"] == ["256"]
    page.fill("#acceptance", "0.2,0.5")
    error = page.locator("[data-error]")
    expect(error).to_contain_text("must not increase", timeout=UPDATE_MS)
    expect(error).to_contain_text("Positional acceptance")
    expect(page.locator("#trees-results")).to_have_class("stale failed")  # the refused input's results: hidden
    expect(page.locator("#acceptance-error")).to_contain_text("must not increase")
    page.fill("#acceptance", "0.5,0.3")
    expect(error).to_be_hidden(timeout=UPDATE_MS)
    expect(page.locator("#trees-summary")).to_contain_text("a binary tree 5.00")
    assert len(watch.console_errors) == 1 and "422" in watch.console_errors[0]
    assert watch.foreign_requests == []


def test_results_are_dimmed_until_the_new_view_arrives(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + "/decide")
    held: list[Route] = []
    page.route(f"**{VIEW}*", lambda route: held.append(route))
    page.fill("#k_max", "8")
    wait_until(page, "document.querySelectorAll('[data-results].stale').length > 0")
    regions = page.locator("[data-results]")
    assert regions.count() == page.locator("[data-results].stale").count()
    assert page.get_attribute("#schedule-results", "aria-busy") == "true"
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert len(held) == 1
    held[0].continue_()
    expect(page.locator("#schedule-results")).not_to_have_class("stale", timeout=UPDATE_MS)
    assert page.locator("[data-results].stale").count() == 0
    assert_clean(watch)


def test_a_clamped_address_value_is_shown_clamped_with_a_note(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + "/decide?c=20&budget=999")
    assert page.input_value("#c") == "10.0" or page.input_value("#c") == "10"
    expect(page.locator("#budget-value")).to_have_text("256")
    notes = page.locator("ul.notes li")
    expect(notes).to_have_count(2)
    expect(notes.first).to_have_text("Draft cost c per draft step 20 from the address is out of range; showing 10.")
    assert_clean(watch)


def test_no_request_is_sent_twice(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + "/decide")
    requests = view_requests(page)
    page.select_option("#regime", "compute-bound")
    expect(page.locator("#calibrate-results")).not_to_have_class("stale", timeout=UPDATE_MS)
    page.fill("#k_max", "12")
    expect(page.locator("#k_max")).to_have_value("12")
    wait_until(page, "location.search.includes('k_max=12')")
    expect(page.locator("#calibrate-results")).not_to_have_class("stale", timeout=UPDATE_MS)
    page.wait_for_timeout(400)
    urls = [url for url, _ in requests]
    assert len(urls) == len(set(urls)) == 2, urls
    assert_clean(watch)


def test_nothing_is_wider_than_a_phone(page: Page, live_server: str, watch: PageWatch) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    open_decide(page, live_server + "/decide?mode=length")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    wide = page.evaluate(
        """[...document.querySelectorAll('main *')].filter((element) => {
             const box = element.getBoundingClientRect();
             return box.width > 0 && box.right > window.innerWidth + 1
               && !element.closest('.table-scroll') && !element.closest('.config-text');
           }).map((element) => element.id || element.tagName)"""
    )
    assert wide == []
    scrolls = page.locator(".table-scroll")
    # The draft sources are stacked: a card per source, every value after its column's name, all in sight.
    cells = page.evaluate(
        "Array.from(document.querySelectorAll('#sources-table tbody td'), (cell) => [cell.dataset.label,"
        " cell.getBoundingClientRect().right])"
    )
    assert len(cells) == 5 * 9 and all(label and right <= 390 for label, right in cells)
    assert scrolls.count() >= 3
    pre = page.locator("#config-text")
    assert pre.evaluate("(box) => getComputedStyle(box).overflowX") == "auto"
    assert pre.evaluate("(box) => box.getBoundingClientRect().right") <= 390
    for name in ("c", "regime", "mode", "length", "k", "acceptance", "budget", "ngram_p", "hw", "engine", "url"):
        assert page.locator(f'label[for="{name}"], [aria-label][id="{name}"]').count() >= 1
    assert_clean(watch)


def test_the_page_is_shorter_than_six_thousand_pixels_on_a_desktop(
    page: Page, live_server: str, watch: PageWatch
) -> None:
    page.set_viewport_size({"width": 1366, "height": 900})
    open_decide(page, live_server + "/decide")
    height: int = page.evaluate("document.documentElement.scrollHeight")
    assert 2_000 < height < 6_000
    assert_clean(watch)


@pytest.mark.parametrize("viewport", [(1200, 900), (390, 844)], ids=["desktop", "phone"])
def test_axe_finds_no_serious_or_critical_violation(
    page: Page, live_server: str, watch: PageWatch, viewport: tuple[int, int]
) -> None:
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    open_decide(page, live_server + "/decide?mode=rate&regime=linear")
    results = Axe().run(page)
    found = [
        f"{violation['impact']} {violation['id']}: {[node['target'] for node in violation['nodes']]}"
        for violation in results.response["violations"]
        if violation["impact"] in ("serious", "critical")
    ]
    assert found == []
    assert_clean(watch)


@pytest.mark.parametrize(
    ("format_name", "engine", "p", "k"),
    [
        ("sglang-server-info", "SGLang", 0.7, 4),
        ("trtllm-iteration-stats", "TensorRT-LLM", 0.75, 4),
        ("llamacpp-log", "llama.cpp", 0.65, 5),
    ],
)
def test_another_engines_report_calibrates_on_the_page(
    page: Page, live_server: str, watch: PageWatch, format_name: str, engine: str, p: float, k: int
) -> None:
    open_decide(page, live_server + "/decide")
    report = engine_reports.example_report(format_name, p, k, cycles=4_000, seed=3)
    page.fill("#metrics", report)
    expect(page.locator("#cal-engine-name")).to_have_text(engine, timeout=UPDATE_MS)
    expected_view = httpx.post(live_server + VIEW, json={"metrics": report, "baseline": ""}).json()
    read = expected_view["calibration"]["engine"]
    expect(page.locator("#cal-p")).to_have_text(expected_view["calibration"]["p"])
    expect(page.locator("#cal-interval")).to_have_text(read["interval"])
    if read["p_low"] is None:  # SGLang reports a mean acceptance length without its count: no interval to give
        assert read["interval"].startswith("no interval") and abs(float(expected_view["calibration"]["p"]) - p) < 0.02
    else:
        assert read["p_low"] <= p <= read["p_high"]
    expect(page.locator("#cal-k")).to_contain_text(f"{k} ")
    # The schedule and the config follow the calibrated p.
    expect(page.locator("#schedule-summary")).to_have_text(expected_view["schedule"]["summary"])
    expect(page.locator("#config-text")).to_have_text(expected_view["config"]["text"])
    assert_clean(watch)


def test_the_config_follows_the_engine_and_the_setup(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + "/decide")
    page.select_option("#engine", "trtllm")
    page.select_option("#model", "dense-70b")
    wait_until(page, "new URLSearchParams(location.search).get('model') === 'dense-70b'", timeout=20)
    state = {name: values[0] for name, values in url_state(page).items()}
    assert state == {"engine": "trtllm", "model": "dense-70b"}
    link = httpx.get(live_server + VIEW, params=state).json()["links"]["config"]
    answer = httpx.get(live_server + link).json()
    expect(page.locator("#config-text")).to_have_text(answer["text"], timeout=UPDATE_MS)
    expect(page.locator("#config-headline")).to_have_text(answer["headline"])
    assert "draft_len_schedule" in answer["text"]
    assert_clean(watch)


def test_data_parallel_ranks_change_vllms_config_on_the_page(page: Page, live_server: str, watch: PageWatch) -> None:
    # vllm/config/vllm.py @ 000fc94b754f _maybe_disable_dynamic_sd_for_data_parallel: above one rank the per-batch
    # schedule is dropped, so the config holds one num_speculative_tokens and --data-parallel-size
    open_decide(page, live_server + "/decide?engine=vllm&model=dense-70b&draft_path=org/draft")
    expect(page.locator("#config-text")).to_contain_text("num_speculative_tokens_per_batch_size")
    assert page.evaluate("document.getElementById('config-choices').open")  # a draft path given: open
    expect(page.locator("label[for=data_parallel]")).to_have_text("Data-parallel ranks")
    page.fill("#data_parallel", "2")
    wait_until(page, "new URLSearchParams(location.search).get('data_parallel') === '2'", timeout=20)
    state = {name: values[0] for name, values in url_state(page).items()}
    answer = httpx.get(live_server + VIEW, params=state).json()["config"]
    expect(page.locator("#config-text")).to_have_text(answer["text"], timeout=UPDATE_MS)
    assert "--data-parallel-size 2" in answer["text"] and "num_speculative_tokens_per_batch_size" not in answer["text"]
    assert_clean(watch)


def test_the_copy_button_puts_the_config_on_the_clipboard(browser: Browser, live_server: str) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    page = context.new_page()
    try:
        open_decide(page, live_server + "/decide?engine=sglang")
        text = page.text_content("#config-text")
        assert text and "--speculative" in text
        page.click("#config-copy")
        expect(page.locator("#config-copy-status")).to_have_text("Copied.", timeout=UPDATE_MS)
        assert page.evaluate("navigator.clipboard.readText()") == text
    finally:
        context.close()


def test_the_rules_and_dashboard_for_this_setup_are_shown_and_copied(browser: Browser, live_server: str) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    page = context.new_page()
    try:
        open_decide(page, live_server + "/decide")
        expect(page.locator("#watch-headline")).to_contain_text("vLLM")
        rules = page.text_content("#rules-text")
        assert rules and rules.startswith("#") and "SpeculativeDecodingNotPaying" in rules
        page.click("#rules-copy")
        expect(page.locator("#rules-copy + a + [role=status]")).to_have_text("Copied.", timeout=UPDATE_MS)
        assert page.evaluate("navigator.clipboard.readText()") == rules
        page.click("#dashboard-copy")
        expect(page.locator("#dashboard-copy + a + [role=status]")).to_have_text("Copied.", timeout=UPDATE_MS)
        assert json.loads(page.evaluate("navigator.clipboard.readText()"))["panels"]

        page.select_option("#engine", "sglang")  # the shown files follow the engine
        expect(page.locator("#watch-headline")).to_contain_text("SGLang", timeout=UPDATE_MS)
        assert "sglang" in (page.text_content("#rules-text") or "")
        assert (
            page.get_attribute("#rules-link", "href")
            == json.loads(page.evaluate("fetch('/api/v1/views/decide?engine=sglang').then(r => r.text())"))["links"][
                "rules"
            ]
        )
    finally:
        context.close()


def test_without_a_clipboard_the_copy_button_selects_the_text(browser: Browser, live_server: str) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.add_init_script("Object.defineProperty(navigator, 'clipboard', { value: undefined });")
    page = context.new_page()
    try:
        open_decide(page, live_server + "/decide?engine=llamacpp")
        page.click("#config-copy")
        expect(page.locator("#config-copy-status")).to_contain_text("Selected", timeout=UPDATE_MS)
        assert page.evaluate("window.getSelection().toString()") == page.text_content("#config-text")
    finally:
        context.close()


def test_a_url_is_not_fetched_and_the_page_says_so(page: Page, live_server: str, watch: PageWatch) -> None:
    open_decide(page, live_server + "/decide")
    message = page.locator("#fetch-message")
    expect(message).to_be_hidden()
    # The URL first: a report emptied while no URL is given is rightly refused (422), and a busy machine may
    # send that in-between state before the URL arrives.
    page.fill("#url", "http://10.0.0.1:8000/metrics")
    page.fill("#metrics", "")
    expect(message).to_be_visible(timeout=UPDATE_MS)
    expect(message).to_contain_text("does not fetch URLs")
    expect(message).to_contain_text("specdec-lab calibrate --from http://10.0.0.1:8000/metrics")
    for readout in ("#cal-p", "#cal-best-k", "#cal-best-speedup"):
        expect(page.locator(readout)).to_have_text("–")
    expect(page.locator("#verdict-schedule")).to_have_text("No report read yet")
    expect(page.locator("#verdict-config")).to_be_hidden()
    assert_clean(watch)


@pytest.mark.parametrize("size", [(1366, 900), (390, 844)])
def test_the_page_opens_with_one_verdict(browser: Browser, live_server: str, size: tuple[int, int]) -> None:
    """The first screen answers the question: the plan's schedule, its speedup and the config, with Copy; the
    verdict's k at the operating batch is the one the config runs there (one plan for both)."""
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = context.new_page()
    open_decide(page, live_server + "/decide?regime=roofline&batch=16")
    body = httpx.get(live_server + VIEW + "?regime=roofline&batch=16").json()
    config = httpx.get(live_server + body["links"]["config"]).json()
    expect(page.locator("#verdict-schedule")).to_have_text(body["verdict"]["schedule"])
    runs = config["engine_k_by_batch"][15]
    expect(page.locator("#verdict-speedup")).to_contain_text(f"k = {runs}," if runs else "leave it off")
    expect(page.locator("#verdict-speedup")).to_contain_text("at batch 16")
    assert page.text_content("#config-text") == config["text"]
    box = page.locator("#verdict-schedule").bounding_box()
    assert box is not None and box["y"] + box["height"] <= size[1], "the verdict is on the first screen"
    copy = page.locator("#config-copy").bounding_box()
    assert copy is not None and copy["y"] < (size[1] if size[0] > 1000 else 2 * size[1])
    expect(page.locator("#sources-table")).to_be_hidden()
    expect(page.locator("#trees-summary")).to_be_hidden()
    context.close()


def test_a_reports_model_name_chooses_the_target(page: Page, live_server: str, watch: PageWatch) -> None:
    """A scrape served as Llama-3.3-70B picks the 70B target when none is chosen, and says so."""
    open_decide(page, live_server + "/decide?mode=metrics")
    scrape = page.input_value("#metrics").replace('model_name="target-model"', 'model_name="meta-llama/Llama-3.3-70B"')
    page.fill("#metrics", scrape)
    expect(page.locator("#verdict-target")).to_contain_text("Llama-3.3-70B", timeout=UPDATE_MS)
    expect(page.locator("#model")).to_have_value("dense-70b")
    expect(page.locator("#schedule-setup")).to_contain_text("Dense 70B")
    assert_clean(watch)
