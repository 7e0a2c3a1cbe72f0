from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from app.model.arithmetic import closed_form as cf
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
    wait_until(page, "location.search === '?k=4'")  # a quick second change reaches the address within 200 ms

    page.fill("#p", "0.5")  # range inputs accept fill(), which fires input
    expect(page.locator("#p-value")).to_have_text("0.50")
    expect(page.locator("#speedup")).to_have_text(f"{cf.speedup(0.5, 4, 0.15):.2f}×")
    expect(page.locator("#best-k")).to_have_text(str(cf.best_k(0.5, 0.15, 64)[0]))
    wait_until(page, "new URLSearchParams(location.search).get('p') === '0.5'")
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
    # the view's k is set when the view arrives; the chart is drawn once Plotly has loaded, which can be later
    wait_until(page, "document.getElementById('histogram').dataset.k === '6'")
    wait_until(page, "document.getElementById('histogram').dataset.ready === '1'")
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
        page.evaluate(NEXT_FRAME)  # the page answers the input events of a frame once, in that frame
        local = {key: text for key, text in page.evaluate(READOUTS).items() if key not in SERVER_ONLY}
        wait_until(
            page,
            f"document.getElementById('histogram').dataset.k === '{k}'"
            " && !document.getElementById('histogram').classList.contains('stale')",
        )
        assert {key: page.evaluate(READOUTS)[key] for key in local} == local
        assert len(local) == 9
    assert_clean(watch)


SERVER_ONLY = {"readouts.simulation", "readouts.best_limit"}
NEXT_FRAME = "new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))"
READOUTS = (
    "Object.fromEntries([...document.querySelectorAll('[data-text^=\"readouts.\"]')]"
    ".map((e) => [e.dataset.text, e.textContent]))"
)


# ---------------------------------------------------------------- before Plotly, one frame per update, the run

PLOTLY = "**/vendor/plotly.min.js"


def test_controls_and_readouts_work_before_plotly_arrives(page: Page, live_server: str, watch: PageWatch) -> None:
    """Plotly's 1.4 MB load without blocking: sliders, readouts and the address answer while the charts wait."""
    held: list[Route] = []
    page.route(PLOTLY, lambda route: held.append(route))
    page.goto(live_server + "/", wait_until="commit")  # the load event waits for Plotly
    wait_until(page, "document.body?.dataset.live === '1'")
    assert held and page.evaluate("typeof window.Plotly") == "undefined"
    placeholder = page.evaluate(
        """(() => { const chart = document.getElementById('curve');
          return { empty: chart.childElementCount === 0, height: chart.getBoundingClientRect().height,
                   text: getComputedStyle(chart, '::before').content }; })()"""
    )
    assert placeholder["empty"] and placeholder["height"] >= 200 and "Loading the chart" in placeholder["text"]
    page.fill("#p", "0.9")
    expect(page.locator("#speedup")).to_have_text(f"{cf.speedup(0.9, 6, 0.15):.2f}×")
    expect(page.locator("#best-k")).to_have_text(str(cf.best_k(0.9, 0.15, 64)[0]))
    wait_until(page, "new URLSearchParams(location.search).get('p') === '0.9'")
    assert page.evaluate("typeof window.Plotly") == "undefined", "all of that without Plotly"
    held[0].continue_()
    wait_until(page, CURVE_READY)
    speedups: list[float] = page.evaluate(
        "document.getElementById('curve').data.find((trace) => trace.meta === 'speedup').y"
    )
    assert speedups[6] == pytest.approx(cf.speedup(0.9, 6, 0.15)), "the chart is drawn for the controls as they are"
    assert_clean(watch)


# Marks task boundaries without timing anything: a flag raised in a task is lowered by a timer, which runs only in a
# later task.  `inPlotlysTask`: the chart was drawn in the task that ran Plotly's own start (the assignment of
# window.Plotly ends it); `afterOther`: in the same task as the chart drawn before it.
TASKS = """
window.__firstDraws = [];
let plotlysTask = false, drawTask = false, library;
Object.defineProperty(window, "Plotly", {
  configurable: true,
  get() { return library; },
  set(value) {
    library = value;
    plotlysTask = true;
    setTimeout(() => { plotlysTask = false; }, 0);
    const react = value.react;
    value.react = function (element, ...rest) {
      if (!window.__firstDraws.some((draw) => draw.id === element.id)) {
        window.__firstDraws.push({ id: element.id, inPlotlysTask: plotlysTask, afterOther: drawTask });
        drawTask = true;
        setTimeout(() => { drawTask = false; }, 0);
      }
      return react.call(this, element, ...rest);
    };
  },
});
"""


def test_charts_that_waited_for_plotly_are_drawn_one_per_task(browser: Browser, live_server: str) -> None:
    """Plotly's start and each chart that waited for it run in tasks of their own, so that the page answers input
    between them (drawn in one task they held the main thread for half a second on a slow machine)."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.add_init_script(TASKS)
    held: list[Route] = []
    page.route(PLOTLY, lambda route: held.append(route))
    page.goto(live_server + "/", wait_until="commit")
    wait_until(page, "document.body?.dataset.live === '1'")
    waiting = page.evaluate("document.querySelectorAll('[data-figure]').length")
    held[0].continue_()
    wait_until(page, CURVE_READY)
    wait_until(page, "document.getElementById('run')?.dataset.ready === '1'")
    draws: list[dict[str, Any]] = page.evaluate("window.__firstDraws")
    plots = page.evaluate("Array.from(document.querySelectorAll('.js-plotly-plot'), (plot) => plot.id)")
    context.close()
    assert sorted(plots) == sorted(draw["id"] for draw in draws), "each chart drawn once it had its turn"
    assert waiting >= 2 and len(draws) >= 2, draws
    assert draws[0]["id"] == "curve", "the chart a newcomer looks at first is drawn first"
    assert [draw for draw in draws if draw["inPlotlysTask"] or draw["afterOther"]] == []


STARTS = """
window.__plotlyStart = null;
document.addEventListener("load", (event) => {
  if (event.target.id !== "plotly-script") return;
  const ticks = { count: 0 };
  const pending = window.PlotlyReady;
  window.__plotlyStart = { libraryAtLoad: typeof window.Plotly, promise: pending instanceof Promise, ticks: 0 };
  const count = () => { ticks.count += 1; if (!window.Plotly) setTimeout(count, 0); };
  setTimeout(count, 0);
  if (pending) pending.then((library) => {
    window.__plotlyStart.ticks = ticks.count;
    window.__plotlyStart.same = library === window.Plotly;
  });
}, true);
"""


def test_plotly_starts_over_several_tasks_before_it_draws(browser: Browser, live_server: str) -> None:
    """The bundle's modules run in stages, a task each (scripts/plotly_bundle.mjs): when its script has run, Plotly
    is not there yet and PlotlyReady is pending; tasks later it resolves to window.Plotly, and the charts are drawn
    with it, scatter and bar alike."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.add_init_script(STARTS)
    page.goto(live_server + "/", wait_until="commit")
    wait_until(page, CURVE_READY)
    wait_until(page, "document.getElementById('run')?.dataset.ready === '1'")
    start: dict[str, Any] = page.evaluate("window.__plotlyStart")
    traces = page.evaluate(
        "Array.from(document.querySelectorAll('.js-plotly-plot'), (plot) => plot._fullData.map((t) => t.type)).flat()"
    )
    context.close()
    assert start["libraryAtLoad"] == "undefined" and start["promise"], start
    assert start["same"] is True, start
    assert start["ticks"] >= 5, f"started in one task or few: {start}"
    assert {"scatter", "bar"} <= set(traces), traces


COUNT_REDRAWS = """async ([frames, perFrame]) => {
  const slider = document.getElementById('k');
  const react = window.Plotly.react;
  const redraws = []; // the animation frame (its time) of each redraw of the curve
  window.Plotly.react = (element, ...rest) => {
    if (element.id === 'curve') redraws.push(document.timeline.currentTime);
    return react(element, ...rest);
  };
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
  let value = 0;
  for (let f = 0; f < frames; f += 1) {
    await frame();
    for (let j = 0; j < perFrame; j += 1) {
      value += 1;
      slider.value = String(value);
      slider.dispatchEvent(new Event('input', { bubbles: true }));
    }
  }
  for (let f = 0; f < 3; f += 1) await frame();
  window.Plotly.react = react;
  return { redraws, frames: new Set(redraws).size, tokens: document.getElementById('tokens').textContent,
           measures: performance.getEntriesByName('specdec:input-frame').length };
}"""


def test_a_drag_updates_the_page_once_per_animation_frame(page: Page, live_server: str, watch: PageWatch) -> None:
    """However many input events a frame has, the page is updated at most once in it: at once for the first change
    after a quiet frame, then in the next frame for all that came since."""
    open_demo(page, live_server + "/")
    page.route("**/api/v1/views/**", lambda route: None)  # only the drag itself redraws
    result = page.evaluate(COUNT_REDRAWS, [4, 3])
    assert len(result["redraws"]) == result["frames"], f"two redraws in one frame: {result['redraws']}"
    assert len(result["redraws"]) <= 5, "twelve input events in four frames: at most one redraw per frame, and one"
    assert result["tokens"] == f"{cf.expected_tokens(0.75, 12):.2f}", "of the last value"
    assert result["measures"] >= 1, "each update is timed for the benchmark (User Timing)"
    expect(page.locator("#k-value")).to_have_text("12")
    assert "current k = 12" in trace_names(page)


RUN_WATCH = """
window.__runRecords = [];
window.__runViolations = [];
document.addEventListener('DOMContentLoaded', () => {
  const strip = document.getElementById('run-tokens');
  const summary = document.getElementById('run-summary');
  const check = () => {
    const text = summary.textContent;
    const found = /\\(cycle (\\d+) of (\\d+)\\)/.exec(text);
    const tokens = [...strip.querySelectorAll('.token')];
    if (!found || tokens.length === 0 || !tokens.some((token) => token.classList.contains('pending'))
        && window.__runRecords.length === 0) return;
    const cycle = Number(found[1]);
    const revealed = tokens.filter((token) => !token.classList.contains('pending')).length;
    const before = tokens.filter((token) => Number(token.dataset.cycle) < cycle).length;
    const upTo = tokens.filter((token) => Number(token.dataset.cycle) <= cycle).length;
    window.__runRecords.push([text, revealed, tokens.length]);
    if (revealed < before || revealed > upTo) window.__runViolations.push([text, revealed, before, upTo]);
  };
  const observer = new MutationObserver(check);
  observer.observe(strip, { subtree: true, childList: true, attributes: true, attributeFilter: ['class'] });
  observer.observe(summary, { subtree: true, childList: true, characterData: true });
});
"""


def test_the_summary_follows_the_run_from_its_start(browser: Browser, live_server: str) -> None:
    """The summary never says more than the strip shows: not the last cycle over an empty strip on load, and not
    the previous run's last cycle while a new run begins."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.add_init_script(RUN_WATCH)
    page.goto(live_server + "/?p=0.9")
    wait_until(page, "document.getElementById('run')?.dataset.cycles !== undefined", timeout=20)
    records: list[list[Any]] = page.evaluate("window.__runRecords")
    assert records and "(cycle 0 of" in records[0][0], records[:3]
    cycles = int(records[-1][0].split(" of ")[-1].rstrip(")"))
    assert records[-1][0].endswith(f"(cycle {cycles} of {cycles})") and records[-1][1] == records[-1][2]
    page.evaluate("window.__runRecords = []; delete document.getElementById('run').dataset.cycles")
    page.click("#new-run")
    wait_until(page, "document.getElementById('run').dataset.cycles !== undefined", timeout=20)
    renewed: list[list[Any]] = page.evaluate("window.__runRecords")
    assert renewed and "(cycle 0 of" in renewed[0][0], renewed[:3]
    assert page.evaluate("window.__runViolations") == []
    context.close()


def test_the_run_takes_the_space_and_time_it_needs(browser: Browser, live_server: str) -> None:
    """At p = 0.1 most drafts are never checked: they are drawn narrow, and the long run is revealed quickly."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    page.goto(live_server + "/?p=0.1")
    wait_until(page, "document.querySelector('#run-tokens .token.pending') !== null")
    started = page.evaluate("performance.now()")
    strip = page.evaluate("document.getElementById('run-tokens').getBoundingClientRect().height")
    assert strip <= 340, f"the strip reserves {strip} px on a phone"
    widths = page.evaluate(
        """(() => { const width = (kind) => document.querySelector(`#run-tokens .token.${kind}`)
          .getBoundingClientRect().width; return { discarded: width('discarded'), rejected: width('rejected') }; })()"""
    )
    assert widths["discarded"] <= widths["rejected"] / 2
    wait_until(page, "document.querySelector('#run-tokens .token.pending') === null", timeout=20)
    assert page.evaluate("performance.now()") - started < 5000, "the whole run is revealed within 5 s"
    assert page.evaluate("document.getElementById('run-tokens').getBoundingClientRect().height") == strip
    legend = page.text_content(".run-legend") or ""
    assert "rejected draft" in legend and "never checked" in legend
    context.close()


MULTIPLICATION = re.compile(r"×\s?\d|\d(?:\.\d+)?\s?x\b")


@pytest.mark.parametrize("path", ["/?k=4&p=0.8&c=0.1", "/embed?parts=controls,readouts,curve,run,histogram"])
def test_one_multiplication_sign_style(page: Page, live_server: str, path: str) -> None:
    """Factors are written 2.04×, never ×2.04 or 2.04x."""
    open_demo(page, live_server + path)
    wait_until(page, "document.getElementById('run')?.dataset.cycles !== undefined", timeout=20)
    text = page.inner_text("body")
    assert MULTIPLICATION.findall(text) == []
    assert re.search(r"\d\.\d\d×", text)


# ---------------------------------------------------------------- in the task of the input event

QUICK_MOVES = """([ks, p]) => {
  const slider = document.getElementById('k');
  const seen = [];
  for (const k of ks) {
    slider.value = String(k);
    slider.dispatchEvent(new Event('input', { bubbles: true }));
    // read in the same task: no frame, no timer has run since the event
    seen.push({
      k,
      speedup: document.getElementById('speedup').textContent,
      tokens: document.getElementById('tokens').textContent,
      operations: document.getElementById('operations').textContent,
      address: new URLSearchParams(location.search).get('k'),
      dimmed: document.querySelector('.readouts').classList.contains('stale'),
    });
  }
  return seen;
}"""


@pytest.mark.parametrize("size", [(1366, 900), (390, 844)])
def test_readouts_and_the_address_follow_the_input_event_itself(
    browser: Browser, live_server: str, size: tuple[int, int]
) -> None:
    """Eight quick moves of k: after each, before any frame, the readouts (the arithmetic factor among them) and
    the address say that k, and the readouts, right already, are not dimmed while the view is on its way."""
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = context.new_page()
    open_demo(page, live_server + "/")
    ks = [7, 9, 12, 14, 13, 11, 12, 10]
    seen: list[dict[str, Any]] = page.evaluate(QUICK_MOVES, [ks, 0.75])
    for row in seen:
        k = row["k"]
        assert row["speedup"] == f"{cf.speedup(0.75, k, 0.15):.2f}×", row
        assert row["tokens"] == f"{cf.expected_tokens(0.75, k):.2f}", row
        assert row["operations"] == f"{cf.operations_increase(0.75, k):.2f}×", row
        assert row["address"] == str(k), row
        assert row["dimmed"] is False, row
    assert page.evaluate("document.getElementById('histogram').classList.contains('stale')"), "the server's part waits"
    wait_until(page, "document.getElementById('histogram').dataset.k === '10'")
    expect(page.locator("#operations")).to_have_text(f"{cf.operations_increase(0.75, 10):.2f}×")
    assert urlsplit(page.url).query == "k=10"
    context.close()


def test_the_labels_say_one_thing_each(page: Page, live_server: str) -> None:
    open_demo(page, live_server + "/")
    terms = page.locator("#demo-details dt").all_text_contents()
    assert any(term.startswith("Extra arithmetic against plain decoding") and "cost factor" in term for term in terms)
    assert not any("Arithmetic operations" in term for term in terms)
    assert "Draft acceptance rate an engine reports" in terms
    # one number, said once, with the other meaning of it beside the value rather than in the label
    expect(page.locator("#acceptance-rate + .dd-note")).to_contain_text("largest draft cost that breaks even")
    rate = cf.draft_acceptance_rate(0.75, 6)
    assert cf.speedup(0.75, 6, rate) == pytest.approx(1.0)


def test_discarded_drafts_have_one_colour_on_every_page(page: Page, live_server: str) -> None:
    open_demo(page, live_server + "/")
    demo = page.evaluate("getComputedStyle(document.querySelector('.swatch.discarded')).backgroundColor")
    page.goto(live_server + "/exact")
    wait_until(page, "document.body.dataset.ready === '1'")
    exact = page.evaluate(
        """(() => { const probe = document.createElement('td'); probe.className = 'tok-discarded';
          document.body.append(probe); return getComputedStyle(probe).backgroundColor; })()"""
    )
    assert demo == exact
