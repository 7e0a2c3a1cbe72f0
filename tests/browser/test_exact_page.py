"""The exactness page in Chromium: painted from its view, patched from new views, states, phone and desktop."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from app.model.arithmetic import bursty, closed_form, ngram, sampling
from app.model.limits import MAX_NGRAM_TOKENS
from app.web.pages.controls import url_text
from tests.conftest import PageWatch
from tests.support import wait_until

pytestmark = pytest.mark.browser

FIGURES = ("exact-histogram", "chain-length", "ngram-positions", "bursty-chart")
VIEW_REQUESTS = "/api/v1/views/exact"

# What the page shows, read through the debugging protocol (not page script, which the CSP limits).
SHOWN = """() => {
  const text = (selector) => document.querySelector(selector)?.textContent ?? null;
  const out = {};
  for (const id of ['exact-acceptance', 'exact-overlap', 'exact-test-note', 'chain-summary', 'chain-cycles-title',
    'ngram-acceptance', 'ngram-tokens', 'ngram-closed-form', 'ngram-autocorrelation', 'ngram-bursty', 'ngram-overlap',
    'ngram-corpus', 'rho-simulated', 'rho-exact', 'rho-iid', 'rho-error', 'rho-transitions']) out[id] = text('#' + id);
  out.rules = Array.from(document.querySelectorAll('#exact-rules tbody tr'), (row) =>
    Array.from(row.cells, (cell) => cell.textContent));
  out.cycles = Array.from(document.querySelectorAll('#chain-cycles tbody tr'), (row) =>
    Array.from(row.cells, (cell) => `${cell.className}:${cell.textContent}`));
  out.text = Array.from(document.querySelectorAll('#ngram-text span'),
    (span) => `${span.className}:${span.textContent}`);
  out.controls = Object.fromEntries(Array.from(document.querySelectorAll('form[data-view] [name]'),
    (element) => [element.name, element.value]));
  out.bounds = { rho: document.getElementById('rho').min, draft: document.getElementById('draft_order').max,
    target: document.getElementById('target_order').min };
  return out;
}"""


def expected(view: dict[str, Any]) -> dict[str, Any]:
    """What the page must show for a view, read from the view itself."""
    return {
        "exact-acceptance": view["rule"]["acceptance"],
        "exact-overlap": view["rule"]["overlap"],
        "exact-test-note": view["rule"]["test"],
        "chain-summary": view["chain"]["summary"],
        "chain-cycles-title": view["chain"]["caption"],
        "ngram-acceptance": view["ngram"]["acceptance"],
        "ngram-tokens": view["ngram"]["tokens"],
        "ngram-closed-form": view["ngram"]["closed_form"],
        "ngram-autocorrelation": view["ngram"]["autocorrelation"],
        "ngram-bursty": view["ngram"]["bursty"],
        "ngram-overlap": view["ngram"]["overlap"],
        "ngram-corpus": view["ngram"]["corpus"],
        "rho-simulated": view["bursty"]["simulated"],
        "rho-exact": view["bursty"]["exact"],
        "rho-iid": view["bursty"]["iid"],
        "rho-error": view["bursty"]["error"],
        "rho-transitions": view["bursty"]["transitions"],
        "rules": [[cell["text"] for cell in row["cells"]] for row in view["rule"]["table"]["rows"]],
        "cycles": [
            [f"{cell['class']}:{cell['text']}" for cell in row["cells"]] for row in view["chain"]["table"]["rows"]
        ],
        "text": [f"{span['class']}:{span['text']}" for span in view["ngram"]["text"]],
        "controls": {name: url_text(control["value"]) for name, control in view["controls"].items()},
        "bounds": {
            "rho": f"{view['bursty']['rho_low']:g}",
            "draft": str(view["ngram"]["draft_max"]),
            "target": str(view["ngram"]["target_min"]),
        },
    }


def fetch_view(page: Page, query: str = "") -> dict[str, Any]:
    response = page.request.get(f"{urlsplit(page.url).scheme}://{urlsplit(page.url).netloc}{VIEW_REQUESTS}{query}")
    assert response.ok, response.text()
    body: dict[str, Any] = response.json()
    return body


def open_page(page: Page, url: str) -> list[str]:
    """Open the page, wait until its figures are drawn; the view requests it sends from then on."""
    requests: list[str] = []
    page.on("request", lambda request: VIEW_REQUESTS in request.url and requests.append(request.url))
    page.goto(url)
    wait_until(page, "document.body.dataset.ready === '1'", timeout=30)
    for figure in FIGURES:
        wait_until(page, f"document.getElementById('{figure}')?.dataset.ready === '1'")
    return requests


def url_state(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def settled(page: Page) -> None:
    wait_until(page, "!document.querySelector('[data-results].stale')")


def assert_clean(watch: PageWatch) -> None:
    assert watch.console_errors == []
    assert watch.foreign_requests == []


def shown_without_javascript(browser: Browser, url: str) -> dict[str, Any]:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(url)
        shown: dict[str, Any] = page.evaluate(SHOWN)
        assert page.locator("#exact-histogram").inner_html() == "", "charts are drawn by the driver"
        return shown
    finally:
        context.close()


@pytest.mark.parametrize(
    "query", ["", "?vocab=20&target_temperature=1.5&trials=10000&seed=7&chain_k=6&p=0.9&rho=0.3&k=3"]
)
def test_first_paint_is_the_view_and_the_driver_keeps_it(
    browser: Browser, page: Page, live_server: str, watch: PageWatch, query: str
) -> None:
    first = shown_without_javascript(browser, f"{live_server}/exact{query}")
    requests = open_page(page, f"{live_server}/exact{query}")
    view = fetch_view(page, query)
    assert first == expected(view)
    assert page.evaluate(SHOWN) == first
    assert requests == [], "the first paint needs no view request"
    assert page.url == f"{live_server}/exact{query}", "the address is left as it was"
    names = page.evaluate("Array.from(document.getElementById('exact-histogram').data, (trace) => trace.name)")
    assert names == ["target t", "draft q", "Exact rule", "Accept on argmax", "Resample from the target"]
    assert_clean(watch)


def test_moving_a_control_patches_the_page_from_one_new_view(page: Page, live_server: str, watch: PageWatch) -> None:
    requests = open_page(page, f"{live_server}/exact")
    page.fill("#draft_distance", "2.5")
    expect(page.locator("#draft_distance-value")).to_have_text("2.50")
    pair = sampling.make_pair(50, 1.0, 1.0, 2.5, seed=0)
    expect(page.locator("#exact-overlap")).to_have_text(f"{pair.overlap:.3f}")
    settled(page)
    assert url_state(page) == {"draft_distance": ["2.5"]}
    assert page.evaluate(SHOWN) == expected(fetch_view(page, "?draft_distance=2.5"))
    assert len(requests) == 1 and requests[0].endswith("?draft_distance=2.5")

    page.select_option("#trials", "10000")  # a select fires input and change: still one request
    expect(page.locator("#exact-test-note")).to_contain_text("10,000 trials")
    settled(page)
    assert len(requests) == 2

    page.fill("#draft_distance", "1")  # back to the default: gone from the address
    expect(page.locator("#exact-overlap")).to_have_text(f"{sampling.make_pair(50, 1.0, 1.0, 1.0, 0).overlap:.3f}")
    assert url_state(page) == {"trials": ["10000"]}
    assert len(requests) == 3
    assert_clean(watch)


def test_results_are_dimmed_until_the_new_view_arrives(page: Page, live_server: str, watch: PageWatch) -> None:
    open_page(page, f"{live_server}/exact")
    held: list[Route] = []
    page.route("**/api/v1/views/exact?*", lambda route: held.append(route))
    page.fill("#rho", "0.8")
    wait_until(page, "document.querySelectorAll('[data-results].stale').length >= 4")
    assert page.get_attribute("[data-results] >> nth=0", "aria-busy") == "true"
    for _ in range(100):
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1
    held[0].continue_()
    expect(page.locator("#rho-exact")).to_have_text(f"{bursty.expected_tokens(0.75, 6, 0.8):.2f}")
    settled(page)
    simulated = float((page.text_content("#rho-simulated") or "").split(" ± ")[0])
    assert simulated < closed_form.expected_tokens(0.75, 6) - 0.2
    assert_clean(watch)


def test_an_error_names_the_control_beside_it_and_hides_the_results(
    page: Page, live_server: str, watch: PageWatch
) -> None:
    open_page(page, f"{live_server}/exact")
    error = page.locator("[data-error]")
    expect(error).to_be_hidden()
    page.fill("#ngram_seed", "-3")
    expect(error).to_be_visible()
    expect(error).to_contain_text("N-gram seed must be an integer from 0 to 4294967295; got -3")
    expect(page.locator("#ngram_seed-error")).to_have_text(
        "N-gram seed must be an integer from 0 to 4294967295; got -3"
    )
    assert page.locator("[data-results].stale").count() >= 4
    assert page.locator("[data-results].failed").count() == page.locator("[data-results]").count()
    page.fill("#ngram_seed", "5")
    expect(error).to_be_hidden()
    expect(page.locator("#ngram_seed-error")).to_have_count(0)
    expect(page.locator("[data-results].failed")).to_have_count(0)
    settled(page)
    assert url_state(page) == {"ngram_seed": ["5"]}
    watch.console_errors[:] = [message for message in watch.console_errors if "422" not in message]
    assert_clean(watch)


def test_a_clamped_address_is_shown_clamped_with_a_note(page: Page, live_server: str, watch: PageWatch) -> None:
    open_page(page, f"{live_server}/exact?chain_k=99&p=0.9&rho=-0.9")
    notes = page.locator("ul.notes li")
    expect(notes).to_have_count(2)
    expect(notes.nth(0)).to_have_text("Chain draft length k 99 from the address is out of range; showing 12.")
    expect(notes.nth(1)).to_contain_text("Correlation ρ must be from -0.11 to 1 at acceptance p = 0.90; got -0.9")
    expect(page.locator("#chain_k-value")).to_have_text("12")
    assert page.input_value("#chain_k") == "12"
    assert page.get_attribute("#rho", "min") == "-0.11" and page.input_value("#rho") == "-0.11"
    expect(page.locator("#rho-exact")).to_have_text(f"{bursty.expected_tokens(0.9, 6, -0.11):.2f}")
    assert_clean(watch)


def test_bounds_that_depend_on_another_control_follow_it(page: Page, live_server: str, watch: PageWatch) -> None:
    requests = open_page(page, f"{live_server}/exact")
    assert page.get_attribute("#rho", "min") == "-0.33"
    page.fill("#p", "0.5")
    wait_until(page, "document.getElementById('rho').min === '-1'")
    assert page.get_attribute("#draft_order", "max") == "5" and page.get_attribute("#target_order", "min") == "4"
    page.fill("#target_order", "4")
    wait_until(page, "document.getElementById('draft_order').max === '3'")
    page.fill("#draft_order", "6")  # the browser holds a range input inside its bounds
    assert page.input_value("#draft_order") == "3"
    settled(page)
    expect(page.locator("[data-error]")).to_be_hidden()
    assert url_state(page) == {"target_order": ["4"], "p": ["0.5"]}
    assert len(requests) == len(set(requests)), "no request sent twice"
    assert_clean(watch)


def test_the_text_reads_as_written_and_shows_the_thrown_away_drafts_on_request(
    page: Page, live_server: str, watch: PageWatch
) -> None:
    open_page(page, f"{live_server}/exact")
    text = page.locator("#ngram-text")
    run = ngram.run_pair(4, MAX_NGRAM_TOKENS, 0, 0.5, 3, 6)
    assert text.inner_text() == run.text  # the dropped drafts take no place in the text
    expect(text.locator(".seg-rejected").first).to_be_hidden()
    assert text.locator(".seg-prompt").first.text_content() == "Return the "
    struck = page.evaluate(
        "Array.from(document.querySelectorAll('#ngram-text span, .legend span'))"
        ".filter((span) => getComputedStyle(span).textDecorationLine.includes('line-through')).length"
    )
    assert struck == 0
    page.check("#ngram-show-drafts")
    expect(text.locator(".seg-rejected").first).to_be_visible()
    expect(text.locator(".seg-discarded").first).to_be_visible()
    assert len(text.inner_text()) > len(run.text)
    assert_clean(watch)


def test_every_cycle_of_the_chain_is_listed(page: Page, live_server: str, watch: PageWatch) -> None:
    open_page(page, f"{live_server}/exact")
    page.fill("#chain_k", "1")
    settled(page)
    summary = page.text_content("#chain-summary") or ""
    cycles = int(summary.split(" cycles")[0].split(" in ")[1])
    assert page.locator("#chain-cycles tbody tr").count() == cycles
    expect(page.locator("#chain-cycles-title")).to_have_text(f"All {cycles} cycles of the run, in order")
    assert page.locator("#chain-cycles thead th").count() == 4  # cycle, length, one draft, the target's token
    assert page.locator("#chain-cycles .tok-rejected").count() > 0
    assert "↩" in (page.text_content("#chain-cycles") or "")
    assert_clean(watch)


def test_keyboard_moves_a_slider_and_the_page_follows(page: Page, live_server: str, watch: PageWatch) -> None:
    open_page(page, f"{live_server}/exact")
    page.focus("#rho")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#rho-value")).to_have_text("0.51")
    expect(page.locator("#rho-exact")).to_have_text(f"{bursty.expected_tokens(0.75, 6, 0.51):.2f}")
    assert url_state(page) == {"rho": ["0.51"]}
    assert_clean(watch)


OVERFLOW = """() => Array.from(document.querySelectorAll('body *')).filter((element) => {
  if (element.closest('.table-scroll, .marked-text, .site-nav')) return false;
  return element.getBoundingClientRect().right > document.documentElement.clientWidth + 1;
}).map((element) => `${element.tagName}#${element.id}.${element.getAttribute('class') || ''}`)"""


def test_nothing_is_wider_than_a_phone_but_the_scroll_containers(
    page: Page, live_server: str, watch: PageWatch
) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    open_page(page, f"{live_server}/exact?chain_k=12")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.evaluate(OVERFLOW) == []
    scrolls = page.evaluate(
        "Array.from(document.querySelectorAll('.table-scroll'), (box) => getComputedStyle(box).overflowX)"
    )
    assert scrolls == [
        "visible",
        "auto",
    ]  # the rules' table is stacked; the cycles' table scrolls under its first column
    verdicts = page.evaluate(
        "Array.from(document.querySelectorAll('#exact-rules td:last-child'),"
        " (cell) => cell.getBoundingClientRect().right)"
    )
    assert len(verdicts) == 3 and max(verdicts) <= 390, "Output = target? is in sight on a phone"
    wide = page.evaluate("document.querySelector('#chain-cycles').closest('.table-scroll').scrollWidth")
    assert wide > 390, "the twelve-draft table scrolls inside its container"
    legend_clear = page.evaluate(
        """Array.from(document.querySelectorAll('[data-figure]'), (chart) => {
          const legend = chart.querySelector('.legend')?.getBoundingClientRect();
          const title = chart.querySelector('.ytitle')?.getBoundingClientRect();
          return !legend || !title || legend.bottom <= title.top || legend.left >= title.right;
        })"""
    )
    assert legend_clear == [True] * len(FIGURES)
    assert_clean(watch)


def test_the_page_is_under_six_thousand_pixels_on_a_desktop(page: Page, live_server: str, watch: PageWatch) -> None:
    page.set_viewport_size({"width": 1366, "height": 900})
    open_page(page, f"{live_server}/exact?chain_k=1")  # the longest chain list
    assert page.evaluate("document.documentElement.scrollHeight") < 6000
    assert_clean(watch)


def test_p_is_only_the_acceptance(page: Page, live_server: str, watch: PageWatch) -> None:
    """The target's distribution is t (the draft's q): p names the acceptance, as on every other page."""
    open_page(page, f"{live_server}/exact")
    text = page.inner_text("main")
    for wrong in ("min(p,", "min(1, p(", "TV(p", "target p", "Resample from p", "samples p", "max(0, p"):
        assert wrong not in text, wrong
    assert "min(1, t(x)/q(x))" in text and "Σ min(t, q) = 1 − TV" in text
    assert "the acceptance p" in text
    names = page.evaluate("Array.from(document.getElementById('exact-histogram').data, (trace) => trace.name)")
    assert names[:2] == ["target t", "draft q"]
    assert_clean(watch)
