from __future__ import annotations

import itertools
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, Page, expect

from app.model import bursty, closed_form, sampling
from tests.conftest import PageWatch
from tests.support import wait_until

pytestmark = pytest.mark.browser

CHARTS = ("exact-histogram", "chain-length", "ngram-positions", "bursty-chart")


def ready(chart: str) -> str:
    return f"document.getElementById('{chart}')?.dataset.ready === '1'"


def open_section(page: Page, url: str) -> None:
    page.goto(url)
    for chart in CHARTS:
        wait_until(page, ready(chart), timeout=30)


def url_state(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def assert_clean(watch: PageWatch) -> None:
    assert watch.console_errors == []
    assert watch.foreign_requests == []


def test_exact_rule_passes_and_wrong_rules_fail_on_the_page(page: Page, live_server: str, watch: PageWatch) -> None:
    open_section(page, live_server + "/")
    pair = sampling.make_pair(50, 1.0, 1.0, 1.0, seed=0)
    expect(page.locator("#exact-overlap")).to_have_text(f"{pair.overlap:.3f}")
    expect(page.locator("#exact-rules tr[data-rule='exact'] .verdict")).to_have_text("passes")
    expect(page.locator("#exact-rules tr[data-rule='argmax'] .verdict")).to_have_text("fails")
    expect(page.locator("#exact-rules tr[data-rule='resample_target'] .verdict")).to_have_text("fails")
    names = page.evaluate("Array.from(document.getElementById('exact-histogram').data, (t) => t.name)")
    assert names == ["target p", "draft q", "Exact rule", "Accept on argmax", "Resample from p"]
    mine = {
        "xvocab",
        "xtt",
        "xdt",
        "xdist",
        "xtrials",
        "xseed",
        "chk",
        "ngk",
        "ngtemp",
        "ngdraft",
        "ngtarget",
        "ngseed",
    }
    assert not mine & set(url_state(page)) and "rho" not in url_state(page), "a first visit leaves the URL alone"
    assert_clean(watch)


def test_identical_models_accept_everything(page: Page, live_server: str, watch: PageWatch) -> None:
    open_section(page, live_server + "/?xdist=0&xvocab=20")
    expect(page.locator("#exact-vocab-value")).to_have_text("20")
    expect(page.locator("#exact-overlap")).to_have_text("1.000")
    expect(page.locator("#exact-acceptance")).to_have_text("1.000 ± 0.000")
    assert_clean(watch)


def test_changing_the_distance_refetches_and_records_state(page: Page, live_server: str, watch: PageWatch) -> None:
    open_section(page, live_server + "/")
    page.fill("#exact-distance", "2.5")
    expect(page.locator("#exact-distance-value")).to_have_text("2.50")
    pair = sampling.make_pair(50, 1.0, 1.0, 2.5, seed=0)
    expect(page.locator("#exact-overlap")).to_have_text(f"{pair.overlap:.3f}")
    assert url_state(page)["xdist"] == ["2.5"]
    assert_clean(watch)


def test_chain_shows_rollbacks(page: Page, live_server: str, watch: PageWatch) -> None:
    open_section(page, live_server + "/?chk=6")
    expect(page.locator("#chain-k-value")).to_have_text("6")
    rollbacks = int(page.evaluate("document.getElementById('chain-length').dataset.rollbacks"))
    assert rollbacks > 0
    lengths: list[int] = page.evaluate("document.getElementById('chain-length').data[0].y")
    assert any(later < earlier for earlier, later in itertools.pairwise(lengths))
    assert page.locator("#chain-cycles li").count() > 0
    assert page.locator("#chain-cycles .chain-token.rejected").count() > 0
    assert "↩" in (page.text_content("#chain-cycles") or "")
    assert_clean(watch)


def test_real_text_is_marked(page: Page, live_server: str, watch: PageWatch) -> None:
    open_section(page, live_server + "/")
    text = page.locator("#ngram-text")
    assert text.locator(".mark.prompt").first.text_content() == "Return the "
    assert text.locator(".mark.accepted").count() > 0
    assert text.locator(".mark.corrected").count() > 0
    expect(text.locator(".mark.discarded").first).to_be_hidden()
    page.check("#ngram-show-discarded")
    expect(text.locator(".mark.discarded").first).to_be_visible()
    acceptance = float((page.text_content("#ngram-acceptance") or "").split(" ± ")[0])
    closed = float(page.text_content("#ngram-closed-form") or "nan")
    assert closed == pytest.approx(closed_form.expected_tokens(acceptance, 4), abs=0.02)
    assert int((page.text_content("#ngram-corpus") or "0").replace(",", "")) > 100_000
    assert_clean(watch)


def test_ngram_orders_stay_apart(page: Page, live_server: str, watch: PageWatch) -> None:
    open_section(page, live_server + "/")
    page.fill("#ngram-draft", "6")
    expect(page.locator("#ngram-target-value")).to_have_text("7")
    page.fill("#ngram-target", "2")
    expect(page.locator("#ngram-draft-value")).to_have_text("1")
    wait_until(page, "new URLSearchParams(location.search).get('ngtarget') === '2'")
    expect(page.locator("#ngram-error")).to_be_hidden()
    assert_clean(watch)


def test_rho_slider_moves_simulation_away_from_the_closed_form(page: Page, live_server: str, watch: PageWatch) -> None:
    open_section(page, live_server + "/?rho=0")
    expect(page.locator("#rho-value")).to_have_text("0.00")
    iid = f"{closed_form.expected_tokens(0.75, 6):.2f}"
    expect(page.locator("#rho-exact")).to_have_text(iid)
    expect(page.locator("#rho-iid")).to_have_text(iid)
    expect(page.locator("#rho-error")).to_have_text("+0.0%")

    page.fill("#rho", "0.8")
    expect(page.locator("#rho-value")).to_have_text("0.80")
    expect(page.locator("#rho-exact")).to_have_text(f"{bursty.expected_tokens(0.75, 6, 0.8):.2f}")
    expect(page.locator("#rho-iid")).to_have_text(iid)
    wait_until(page, "document.getElementById('bursty-chart').dataset.rho === '0.8'")
    simulated = float((page.text_content("#rho-simulated") or "").split(" ± ")[0])
    assert simulated < closed_form.expected_tokens(0.75, 6) - 0.2
    assert url_state(page)["rho"] == ["0.8"]
    assert_clean(watch)


def test_rho_slider_lower_end_follows_p(page: Page, live_server: str, watch: PageWatch) -> None:
    open_section(page, live_server + "/?rhop=0.9&rho=-0.9")
    # At p = 0.9 rho cannot go below -0.1/0.9 = -0.111..., so the page starts at -0.11.
    assert page.get_attribute("#rho", "min") == "-0.11"
    expect(page.locator("#rho-value")).to_have_text("-0.11")
    expect(page.locator("#bursty-error")).to_be_hidden()
    expect(page.locator("#rho-exact")).to_have_text(f"{bursty.expected_tokens(0.9, 6, -0.11):.2f}")
    assert_clean(watch)


def test_phone_width_keeps_the_section_usable(page: Page, live_server: str, watch: PageWatch) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    open_section(page, live_server + "/")
    width = page.evaluate("document.getElementById('exact').scrollWidth")
    assert width <= 390
    page.focus("#rho")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#rho-value")).to_have_text("0.51")
    assert_clean(watch)


# --- first paint without JavaScript -----------------------------------------------------------------

FIRST_PAINT = """() => {
  const byId = (id) => document.getElementById(id);
  const out = { trials: byId('exact-trials').value, rhoMin: byId('rho').min };
  for (const id of ['exact-vocab', 'exact-target-temp', 'exact-draft-temp', 'exact-distance', 'chain-k', 'ngram-k',
    'ngram-temperature', 'ngram-draft', 'ngram-target', 'rho', 'rho-p', 'rho-k']) {
    out[id] = [byId(id).value, byId(`${id}-value`).textContent];
  }
  for (const id of ['exact-seed', 'ngram-seed']) out[id] = byId(id).value;
  for (const id of ['exact-acceptance', 'exact-overlap', 'chain-summary', 'rho-exact', 'rho-iid', 'rho-error']) {
    out[id] = byId(id).textContent;
  }
  out.rules = Array.from(document.querySelectorAll('#exact-rules tr'), (row) =>
    Array.from(row.cells, (cell) => `${cell.className}:${cell.textContent}`));
  out.cycles = Array.from(document.querySelectorAll('#chain-cycles li'), (item) =>
    Array.from(item.children, (child) => `${child.className}:${child.title}:${child.textContent}`));
  return out;
}"""


def shown_without_javascript(browser: Browser, url: str) -> dict[str, object]:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(url)
        shown: dict[str, object] = page.evaluate(FIRST_PAINT)  # through the debugging protocol, not page script
        assert page.locator("#exact-histogram").inner_html() == "", "charts are drawn by the script"
        return shown
    finally:
        context.close()


def p_value_text(value: float) -> str:
    return f"{value:.1e}".replace("e-0", "e-").replace("e+00", "e+0") if value < 1e-4 else f"{value:.3f}"


def test_without_javascript_the_section_shows_the_api_numbers(
    browser: Browser, live_server: str, client: TestClient
) -> None:
    query = "?xvocab=20&xtt=1.5&xdist=0.5&xtrials=10000&xseed=7&chk=6&rhop=0.9&rho=0.3&rhok=3"
    shown = shown_without_javascript(browser, live_server + "/" + query)
    family = {"vocab": 20, "target_temperature": 1.5, "draft_temperature": 1.0, "draft_distance": 0.5, "seed": 7}
    exact = client.get("/api/v1/exact-rule", params={**family, "trials": 10_000, "histogram_tokens": 30}).json()
    chain = client.get("/api/v1/chain", params={**family, "k": 6, "tokens": 40}).json()
    markov = client.get("/api/v1/bursty", params={"p": 0.9, "k": 3, "rho": 0.3}).json()

    assert shown["exact-vocab"] == ["3", "20"] and shown["exact-target-temp"] == ["1.5", "1.50"]
    assert shown["trials"] == "10000" and shown["exact-seed"] == "7" and shown["chain-k"] == ["6", "6"]
    assert shown["rho"] == ["0.3", "0.30"] and shown["rho-p"] == ["0.9", "0.90"] and shown["rhoMin"] == "-0.11"
    first = exact["rules"][0]
    assert shown["exact-overlap"] == f"{exact['overlap']:.3f}"
    assert shown["exact-acceptance"] == f"{first['acceptance']:.3f} ± {first['acceptance_standard_error']:.3f}"
    names = {"exact": "Exact rule", "argmax": "Accept on argmax", "resample_target": "Resample from p"}
    assert shown["rules"] == [
        [
            f":{names[rule['rule']]}",
            f":{rule['acceptance']:.3f} ({rule['acceptance_expected']:.3f})",
            f":{rule['bias']:.3f}",
            f":{p_value_text(rule['p_value'])}",
            "verdict verdict-pass:passes" if rule["passes"] else "verdict verdict-fail:fails",
        ]
        for rule in exact["rules"]
    ]
    rows = shown["rules"]
    assert isinstance(rows, list) and [row[-1] for row in rows] == [
        "verdict verdict-pass:passes",
        "verdict verdict-fail:fails",
        "verdict verdict-fail:fails",
    ]
    assert str(shown["chain-summary"]).startswith(
        f"{chain['generated']} tokens in {len(chain['cycles'])} cycles "
        f"({chain['mean_tokens_per_cycle']:.2f} per cycle), "
        f"{chain['rollbacks']} rollbacks; acceptance {chain['acceptance']:.3f}"
    )
    cycles = shown["cycles"]
    assert isinstance(cycles, list) and len(cycles) == min(12, len(chain["cycles"]))
    for items, cycle in zip(cycles, chain["cycles"], strict=False):
        assert [item.rsplit(":", 1)[1] for item in items[1:]] == [str(t) for t in [*cycle["drafted"], cycle["emitted"]]]
    assert shown["rho-exact"] == f"{markov['expected_tokens']:.2f}"
    assert shown["rho-iid"] == f"{markov['iid_expected_tokens']:.2f}"
    assert shown["rho-error"] == f"+{markov['iid_error'] * 100:.1f}%"


def test_without_javascript_slow_panels_say_they_are_computing(browser: Browser, live_server: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(live_server + "/?xtrials=500000")
        expect(page.locator("#exact-rules tr.pending")).to_contain_text("Computing… 500,000 trials")
        expect(page.locator("#exact-rules tr.pending a")).to_have_attribute("href", re.compile(r"trials=500000"))
        expect(page.locator("#ngram-text .pending")).to_contain_text("Computing…")
        expect(page.locator("#ngram-acceptance")).to_have_text("…")
        expect(page.locator("#rho-simulated")).to_have_text("…")
        expect(page.locator("#rho-exact")).to_have_text(f"{bursty.expected_tokens(0.75, 6, 0.5):.2f}")
    finally:
        context.close()


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?xvocab=0x14&xtt=%201.225&xdt=<b>&xtrials=1e4&xseed=17.9&chk=6.5&rhop=0.07&rho=-0.2&rhok=2.5"
        "&ngk=0.5&ngtemp=1.975&ngdraft=6&ngtarget=6&ngseed=1e3",
    ],
)
def test_first_paint_is_what_the_script_then_shows(
    browser: Browser, page: Page, live_server: str, watch: PageWatch, query: str
) -> None:
    first = shown_without_javascript(browser, live_server + "/" + query)
    open_section(page, live_server + "/" + query)
    assert page.evaluate(FIRST_PAINT) == first
    assert_clean(watch)
