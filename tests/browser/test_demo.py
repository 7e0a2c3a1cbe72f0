from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from app.model import closed_form as cf
from tests.conftest import PageWatch
from tests.support import wait_until

pytestmark = pytest.mark.browser

CURVE_READY = "document.querySelector('#curve')?.dataset.ready === '1'"


def open_demo(page: Page, url: str) -> None:
    page.goto(url)
    wait_until(page, CURVE_READY)


def trace_names(page: Page) -> list[str]:
    names: list[str] = page.evaluate("Array.from(document.getElementById('curve').data, (t) => t.name)")
    return names


def assert_clean(watch: PageWatch) -> None:
    assert watch.console_errors == []
    assert watch.foreign_requests == []


def test_defaults_show_the_seed_numbers(page: Page, live_server: str, watch: PageWatch) -> None:
    open_demo(page, live_server + "/")
    expect(page.locator("#tokens")).to_have_text("3.47")
    expect(page.locator("#cost")).to_have_text("1.90")
    expect(page.locator("#speedup")).to_have_text("1.82×")
    expect(page.locator("#best-k")).to_have_text("4")
    assert page.locator("#k").get_attribute("type") == "range"
    assert page.input_value("#k") == "6"
    assert page.input_value("#p") == "0.75"
    assert page.input_value("#c") == "0.15"
    assert_clean(watch)


def test_numbers_are_there_before_any_script_runs(browser: Browser, live_server: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server + "/?k=4&p=0.8&c=0.1")
    assert page.text_content("#tokens") == f"{cf.expected_tokens(0.8, 4):.2f}"
    assert page.text_content("#cost") == f"{cf.cost_per_cycle(4, 0.1):.2f}"
    assert page.text_content("#speedup") == f"{cf.speedup(0.8, 4, 0.1):.2f}×"
    assert page.text_content("#best-k") == str(cf.best_k(0.8, 0.1, 64)[0])
    context.close()


def test_moving_a_slider_updates_readouts_chart_and_url(page: Page, live_server: str, watch: PageWatch) -> None:
    open_demo(page, live_server + "/")
    page.focus("#k")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#k-value")).to_have_text("4")
    expect(page.locator("#tokens")).to_have_text(f"{cf.expected_tokens(0.75, 4):.2f}")
    expect(page.locator("#cost")).to_have_text(f"{cf.cost_per_cycle(4, 0.15):.2f}")
    expect(page.locator("#speedup")).to_have_text(f"{cf.speedup(0.75, 4, 0.15):.2f}×")
    wait_until(page, "document.getElementById('curve').dataset.k === '4'")
    assert "current k = 4" in trace_names(page)
    query = parse_qs(urlsplit(page.url).query)
    assert query["k"] == ["4"]

    page.fill("#p", "0.5")  # range inputs accept fill(), which fires input
    expect(page.locator("#p-value")).to_have_text("0.50")
    expect(page.locator("#speedup")).to_have_text(f"{cf.speedup(0.5, 4, 0.15):.2f}×")
    expect(page.locator("#best-k")).to_have_text(str(cf.best_k(0.5, 0.15, 64)[0]))
    assert parse_qs(urlsplit(page.url).query)["p"] == ["0.5"]
    band_top: list[float] = page.evaluate("document.getElementById('curve').data[0].y")
    assert band_top[4] == pytest.approx(cf.speedup(0.6, 4, 0.15))
    assert_clean(watch)


def test_do_not_speculate_is_shown(page: Page, live_server: str) -> None:
    open_demo(page, live_server + "/?p=0.1&c=0.9&k=2")
    expect(page.locator("#best-k")).to_have_text("off")


def test_band_break_even_current_and_best_traces(page: Page, live_server: str, watch: PageWatch) -> None:
    open_demo(page, live_server + "/")
    names = trace_names(page)
    assert "band p ± 0.10" in names
    assert "break-even (S = 1)" in names
    assert "current k = 6" in names
    assert "best k = 4" in names
    break_even_y: list[float] = page.evaluate(
        "document.getElementById('curve').data.find((t) => t.name.startsWith('break-even')).y"
    )
    assert break_even_y == [1, 1]
    assert page.locator("#curve .main-svg").count() >= 1
    assert_clean(watch)


def test_the_run_animates_token_by_token_and_replays(page: Page, live_server: str, watch: PageWatch) -> None:
    open_demo(page, live_server + "/")
    page.wait_for_selector("#run-tokens .token:not(.pending)")
    early = page.locator("#run-tokens .token:not(.pending)").count()
    page.wait_for_timeout(600)
    later = page.locator("#run-tokens .token:not(.pending)").count()
    assert 0 < early < later
    # Every token is laid out from the start and only revealed in turn.
    assert page.locator("#run-tokens .token").count() >= later
    kinds = set(page.eval_on_selector_all("#run-tokens .token", "els => els.map(e => e.classList[1])"))
    assert "accepted" in kinds
    page.click("#replay")
    page.wait_for_timeout(100)
    assert page.locator("#run-tokens .token:not(.pending)").count() < later
    wait_until(page, "document.getElementById('run-summary').textContent.includes('tokens in')")
    assert page.evaluate("document.getElementById('run').data[0].name") == "speculative"
    assert_clean(watch)


def test_reduced_motion_shows_the_whole_run_at_once(browser: Browser, live_server: str) -> None:
    context = browser.new_context(reduced_motion="reduce")
    page = context.new_page()
    page.goto(live_server + "/")
    wait_until(page, "document.getElementById('run-summary').textContent.includes('cycle')")
    summary = page.text_content("#run-summary") or ""
    cycles = summary.split(" of ")[-1].rstrip(")")
    assert summary.endswith(f"(cycle {cycles} of {cycles})")
    context.close()


def test_state_in_the_url_is_restored(page: Page, live_server: str, watch: PageWatch) -> None:
    open_demo(page, live_server + "/?k=4&p=0.8&c=0.1")
    assert page.input_value("#k") == "4"
    assert page.input_value("#p") == "0.8"
    assert page.input_value("#c") == "0.1"
    expect(page.locator("#speedup")).to_have_text(f"{cf.speedup(0.8, 4, 0.1):.2f}×")
    assert "current k = 4" in trace_names(page)
    assert_clean(watch)


@pytest.mark.parametrize("path", ["/?embed=1&k=3", "/embed?k=3"])
def test_embed_mode_drops_the_chrome(page: Page, live_server: str, watch: PageWatch, path: str) -> None:
    open_demo(page, live_server + path)
    assert page.locator("header.site-header").count() == 0
    assert page.locator("footer").count() == 0
    assert page.locator(".explain").count() == 0
    assert page.input_value("#k") == "3"
    assert page.locator("#curve .main-svg").count() >= 1
    assert_clean(watch)


def test_readable_on_a_phone(browser: Browser, live_server: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    page.goto(live_server + "/")
    wait_until(page, CURVE_READY)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1
    context.close()


def test_histogram_is_held_against_the_closed_form(page: Page, live_server: str, watch: PageWatch) -> None:
    open_demo(page, live_server + "/")
    wait_until(page, "document.getElementById('histogram').dataset.k === '6'")
    counts: list[int] = page.evaluate("document.getElementById('histogram').data[0].y")
    expected: list[float] = page.evaluate("document.getElementById('histogram').data[1].y")
    assert sum(counts) == 100_000
    assert len(counts) == 7
    assert expected == pytest.approx([100_000 * q for q in cf.accepted_distribution(0.75, 6)])
    expect(page.locator("#simulation-summary")).to_contain_text("closed form 3.47")
    page.focus("#k")
    page.keyboard.press("ArrowRight")
    wait_until(page, "document.getElementById('histogram').dataset.k === '7'")
    assert "k=7" in (page.get_attribute("#curve-json", "href") or "")
    assert_clean(watch)


def test_new_run_changes_the_seed_in_the_url(page: Page, live_server: str) -> None:
    open_demo(page, live_server + "/?seed=5")
    page.click("#new-run")
    wait_until(page, "new URLSearchParams(location.search).get('seed') === '6'")


def view_requests(page: Page) -> list[str]:
    requests: list[str] = []
    page.on("request", lambda request: "/api/v1/views/" in request.url and requests.append(request.url))
    return requests


def test_a_fresh_load_writes_no_defaults_into_the_url(page: Page, live_server: str) -> None:
    open_demo(page, live_server + "/")
    assert urlsplit(page.url).query == ""
    page.focus("#k")
    page.keyboard.press("ArrowLeft")
    wait_until(page, "location.search === '?k=5'")
    page.keyboard.press("ArrowRight")
    wait_until(page, "location.search === ''")


def test_a_clamped_value_is_shown_clamped_with_a_note(page: Page, live_server: str, watch: PageWatch) -> None:
    open_demo(page, live_server + "/?k=20&p=0.8")
    assert page.input_value("#k") == "16"
    expect(page.locator("#k-value")).to_have_text("16")
    expect(page.locator(".notes")).to_contain_text("Draft length k 20 from the address is out of range; showing 16.")
    wait_until(page, "location.search === '?k=16&p=0.8'")
    expect(page.locator("#speedup")).to_have_text(f"{cf.speedup(0.8, 16, 0.15):.2f}×")
    assert_clean(watch)


def test_no_request_is_sent_twice_and_stale_results_are_dimmed(page: Page, live_server: str, watch: PageWatch) -> None:
    requests = view_requests(page)
    open_demo(page, live_server + "/")
    page.focus("#k")
    for key in ("ArrowLeft", "ArrowLeft", "ArrowRight", "ArrowRight", "ArrowRight"):
        page.keyboard.press(key)
    assert page.evaluate("document.getElementById('histogram').classList.contains('stale')")
    wait_until(page, "document.getElementById('histogram').dataset.k === '7'")
    assert not page.evaluate("document.getElementById('histogram').classList.contains('stale')")
    assert len(requests) == len(set(requests)), requests
    assert requests and requests[-1].endswith("/api/v1/views/demo?k=7")
    assert_clean(watch)


def test_readouts_follow_a_drag_before_any_view_arrives(page: Page, live_server: str, watch: PageWatch) -> None:
    open_demo(page, live_server + "/")
    page.route("**/api/v1/views/**", lambda route: None)  # hold every view: only the closed form can answer
    page.fill("#p", "0.9")
    expect(page.locator("#speedup")).to_have_text(f"{cf.speedup(0.9, 6, 0.15):.2f}×")
    expect(page.locator("#best-k")).to_have_text(str(cf.best_k(0.9, 0.15, 64)[0]))
    expect(page.locator("#tokens")).to_have_text(f"{cf.expected_tokens(0.9, 6):.2f}")
    assert page.evaluate("document.getElementById('histogram').classList.contains('stale')")
    assert "current k = 6" in trace_names(page)


def test_the_local_readouts_are_the_views(page: Page, live_server: str, watch: PageWatch) -> None:
    """What the closed form's module writes during a drag is what the server's view then writes."""
    open_demo(page, live_server + "/")
    for k, p, c in ((3, 0.42, 0.07), (16, 0.99, 0.0), (0, 0.5, 0.5), (9, 1.0, 0.31), (1, 0.0, 1.0)):
        page.fill("#k", str(k))
        page.fill("#p", str(p))
        page.fill("#c", str(c))
        local = {key: text for key, text in page.evaluate(READOUTS).items() if key not in SERVER_ONLY}
        wait_until(
            page,
            f"document.getElementById('histogram').dataset.k === '{k}'"
            " && !document.getElementById('histogram').classList.contains('stale')",
        )
        assert {key: page.evaluate(READOUTS)[key] for key in local} == local
        assert len(local) == 8
    assert_clean(watch)


SERVER_ONLY = {"readouts.simulation", "readouts.operations", "readouts.best_limit"}
READOUTS = (
    "Object.fromEntries([...document.querySelectorAll('[data-text^=\"readouts.\"]')]"
    ".map((e) => [e.dataset.text, e.textContent]))"
)
