"""Accessibility: axe-core finds nothing serious or critical, and every demo control works from the keyboard."""

from __future__ import annotations

from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from app.model.arithmetic import closed_form as cf
from tests.conftest import PageWatch
from tests.support import wait_until

pytestmark = pytest.mark.browser

CURVE_READY = "document.querySelector('#curve')?.dataset.ready === '1'"
BLOCKING_IMPACTS = {"serious", "critical"}
MAX_TABS = 80


def open_settled(page: Page, url: str) -> None:
    page.goto(url)
    wait_until(page, "document.body.dataset.ready === '1'")
    if page.query_selector("#curve"):
        wait_until(page, CURVE_READY)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)


def blocking_violations(page: Page) -> list[str]:
    """One line per serious or critical rule broken, with the section of every offending node."""
    results = Axe().run(page)
    found = []
    for violation in results.response["violations"]:
        if violation["impact"] not in BLOCKING_IMPACTS:
            continue
        places = []
        for node in violation["nodes"]:
            selector = node["target"][0] if node["target"] else "html"
            section = page.evaluate(
                "(selector) => document.querySelector(selector)?.closest('section')?.id || 'page'", selector
            )
            places.append(f"#{section} {selector}")
        found.append(f"{violation['impact']} {violation['id']} ({violation['help']}): {'; '.join(places)}")
    return found


@pytest.mark.parametrize(
    "path", ["/", "/embed?k=4&p=0.8&c=0.1", "/embed?parts=run", "/?k=0&p=0.05&c=0.9", "/batch", "/exact", "/decide"]
)
@pytest.mark.parametrize("viewport", [(1200, 900), (390, 844)], ids=["desktop", "phone"])
def test_axe_finds_no_serious_or_critical_violation(
    page: Page, live_server: str, watch: PageWatch, path: str, viewport: tuple[int, int]
) -> None:
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    open_settled(page, live_server + path)
    assert page.evaluate("typeof window.axe") == "undefined"
    violations = blocking_violations(page)
    assert not violations, "\n".join(violations)
    assert page.evaluate("typeof window.axe") == "object", "axe really ran in the page"
    assert watch.console_errors == []


def test_axe_would_report_a_serious_violation(page: Page, live_server: str) -> None:
    """The check itself: an unlabelled slider is reported."""
    open_settled(page, live_server + "/")
    page.evaluate(
        "(() => { const input = document.createElement('input'); input.type = 'range';"
        " document.querySelector('main').append(input); })()"
    )
    assert any("label" in violation for violation in blocking_violations(page))


def tab_to(page: Page, element_id: str) -> int:
    """Press Tab until the element has focus; the number of presses it took."""
    for presses in range(1, MAX_TABS + 1):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement && document.activeElement.id") == element_id:
            return presses
    raise AssertionError(f"#{element_id} not reached with {MAX_TABS} Tab presses")


def focus_ring(page: Page) -> dict[str, Any]:
    ring: dict[str, Any] = page.evaluate(
        "(() => { const style = getComputedStyle(document.activeElement);"
        " return {style: style.outlineStyle, width: parseFloat(style.outlineWidth)}; })()"
    )
    return ring


def test_sliders_work_from_the_keyboard(page: Page, live_server: str, watch: PageWatch) -> None:
    open_settled(page, live_server + "/")
    tab_to(page, "k")
    ring = focus_ring(page)
    assert ring["style"] != "none" and ring["width"] >= 2, "focused slider must show where focus is"

    page.keyboard.press("ArrowRight")
    expect(page.locator("#k-value")).to_have_text("7")
    expect(page.locator("#tokens")).to_have_text(f"{cf.expected_tokens(0.75, 7):.2f}")
    expect(page.locator("#cost")).to_have_text(f"{cf.cost_per_cycle(7, 0.15):.2f}")
    expect(page.locator("#speedup")).to_have_text(f"{cf.speedup(0.75, 7, 0.15):.2f}×")
    page.keyboard.press("Home")
    expect(page.locator("#k-value")).to_have_text("0")
    expect(page.locator("#speedup")).to_have_text("1.00×")
    page.keyboard.press("End")
    expect(page.locator("#k-value")).to_have_text("16")

    tab_to(page, "p")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#p-value")).to_have_text("0.76")
    expect(page.locator("#tokens")).to_have_text(f"{cf.expected_tokens(0.76, 16):.2f}")

    tab_to(page, "c")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#c-value")).to_have_text("0.14")
    expect(page.locator("#cost")).to_have_text(f"{cf.cost_per_cycle(16, 0.14):.2f}")
    expect(page.locator("#best-k")).to_have_text(str(cf.best_k(0.76, 0.14, 12)[0]))
    assert watch.console_errors == []


@pytest.mark.parametrize("key", ["Enter", " "], ids=["Enter", "Space"])
def test_replay_button_works_from_the_keyboard(page: Page, live_server: str, watch: PageWatch, key: str) -> None:
    page.emulate_media(reduced_motion="reduce")
    open_settled(page, live_server + "/")
    wait_until(page, "document.querySelectorAll('#run-tokens .token').length > 0")
    # A marker that only a fresh replay of the run removes (the strip is rebuilt from scratch).
    page.evaluate(
        "(() => { const marker = document.createElement('i'); marker.id = 'replay-marker';"
        " document.getElementById('run-tokens').append(marker); })()"
    )
    tab_to(page, "replay")
    assert page.evaluate("document.activeElement.tagName") == "BUTTON"
    page.keyboard.press(key)
    wait_until(page, "document.getElementById('replay-marker') === null")
    wait_until(page, "document.querySelectorAll('#run-tokens .token').length > 0")
    assert watch.console_errors == []


def test_tab_order_reaches_the_controls_in_reading_order(page: Page, live_server: str) -> None:
    open_settled(page, live_server + "/")
    order = []
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        element_id = page.evaluate("document.activeElement && document.activeElement.id")
        if element_id in {"k", "p", "c", "replay"} and element_id not in order:
            order.append(element_id)
        if len(order) == 4:
            break
    assert order == ["k", "p", "c", "replay"]


def test_new_run_button_works_from_the_keyboard(page: Page, live_server: str, watch: PageWatch) -> None:
    open_settled(page, live_server + "/")
    tab_to(page, "new-run")
    page.keyboard.press("Enter")
    wait_until(page, "new URLSearchParams(window.location.search).get('seed') === '1'")
    assert watch.console_errors == []


# Controls a keyboard user must be able to reach with Tab.  Not counted: controls inside a closed
# <details> (its <summary> is reachable and opens it) and the unchecked radios of a group with a checked
# one (Tab reaches the group at its checked radio; arrows move within it).
FOCUSABLE = """
(() => {
  const candidates = Array.from(document.querySelectorAll(
    'input:not([type=hidden]), select, textarea, button, a[href], summary, [tabindex]:not([tabindex="-1"])'
  ));
  const closedDetailsHides = (element) => {
    const details = element.closest('details:not([open])');
    return details !== null && element !== details.querySelector(':scope > summary');
  };
  const uncheckedRadioInCheckedGroup = (element) => element.type === 'radio' && !element.checked
    && element.name && document.querySelector(`input[type=radio][name="${element.name}"]:checked`) !== null;
  return candidates.filter((element) => !element.disabled && element.getClientRects().length > 0
      && getComputedStyle(element).visibility !== 'hidden' && !element.closest('[inert], [hidden]')
      && !closedDetailsHides(element) && !uncheckedRadioInCheckedGroup(element))
    .map((element, index) => {
      element.dataset.a11yIndex = String(index);
      const name = (element.getAttribute('aria-label') || element.textContent || element.name || '').trim();
      return `${element.tagName.toLowerCase()}#${element.id || '?'} ${name.slice(0, 40)}`;
    });
})()
"""


def test_every_visible_control_is_reachable_with_tab(page: Page, live_server: str) -> None:
    open_settled(page, live_server + "/")
    controls: list[str] = page.evaluate(FOCUSABLE)
    assert len(controls) >= 6  # at least the three sliders and the demo's buttons
    reached: set[str] = set()
    for _ in range(len(controls) * 2 + 20):
        page.keyboard.press("Tab")
        index = page.evaluate("document.activeElement?.dataset?.a11yIndex ?? null")
        if index is not None:
            reached.add(index)
        if len(reached) == len(controls):
            break
    missing = [control for index, control in enumerate(controls) if str(index) not in reached]
    assert missing == []
