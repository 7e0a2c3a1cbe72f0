"""Every page: the nav that stays in view, the question and JSON twin, heights, and a phone's width."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page

from app.web.pages.registry import LINKED_PAGES, PAGES
from tests.conftest import PageWatch
from tests.support import wait_until

pytestmark = pytest.mark.browser

PATHS = [page.path for page in PAGES]
# Every page, those outside the nav (/published) included: what a phone and a laptop must show whole.
EVERY_PATH = [page.path for page in (*PAGES, *LINKED_PAGES)]
HEIGHT_BOUNDS = {"/": 3000}
HEIGHT_BOUND = 6000
READY = "document.body.dataset.ready === '1'"

# Elements that reach past the right edge without a scrolling (or clipping) ancestor to hold them.
OVERFLOWING = """() => [...document.querySelectorAll('body *')].filter((element) => {
  const box = element.getBoundingClientRect();
  if (box.width === 0 || box.right <= window.innerWidth + 1) return false;
  for (let parent = element.parentElement; parent; parent = parent.parentElement) {
    if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(parent).overflowX)) return false;
  }
  return true;
}).map((element) => `${element.tagName.toLowerCase()}#${element.id}.${element.className}`)"""


@pytest.mark.parametrize("path", PATHS)
def test_the_nav_links_every_page_and_stays_in_view(page: Page, live_server: str, watch: PageWatch, path: str) -> None:
    page.goto(live_server + path)
    wait_until(page, READY)
    links = page.eval_on_selector_all(".site-nav a", "els => els.map((a) => a.getAttribute('href'))")
    assert links[: len(PATHS)] == PATHS and "/docs" in links
    assert page.get_attribute(".site-nav a[aria-current='page']", "href") == path
    page.mouse.wheel(0, 2500)
    page.wait_for_timeout(200)
    assert page.evaluate("window.scrollY") > 0
    assert page.evaluate("document.querySelector('.site-header').getBoundingClientRect().top") == 0
    assert watch.console_errors == [] and watch.foreign_requests == []


@pytest.mark.parametrize("path", PATHS)
def test_each_page_opens_with_its_question_and_its_json_twin(page: Page, live_server: str, path: str) -> None:
    page.goto(live_server + path)
    wait_until(page, READY)
    spec = next(item for item in PAGES if item.path == path)
    assert page.text_content("h1") == spec.title
    assert spec.question in (page.text_content(".question") or "")
    twin = page.get_attribute(".json-twin", "href") or ""
    assert twin.startswith(f"/api/v1/views/{spec.name}")


@pytest.mark.parametrize("path", EVERY_PATH)
def test_height_at_1366x900(page: Page, live_server: str, path: str) -> None:
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(live_server + path)
    wait_until(page, READY)
    page.wait_for_load_state("networkidle")
    assert page.evaluate("document.documentElement.scrollHeight") <= HEIGHT_BOUNDS.get(path, HEIGHT_BOUND)


@pytest.mark.parametrize("path", EVERY_PATH)
def test_nothing_is_wider_than_a_phone_but_scroll_containers(browser: Browser, live_server: str, path: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(live_server + path)
    wait_until(page, READY)
    page.wait_for_load_state("networkidle")
    assert page.evaluate(OVERFLOWING) == []
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    # Plotly's mode bar would cover the legends: hidden on a phone.
    assert page.evaluate("[...document.querySelectorAll('.modebar')].every((bar) => bar.offsetParent === null)")
    context.close()


def test_scroll_containers_say_they_scroll(browser: Browser, live_server: str) -> None:
    """A table wider than a phone sits in a focusable, labelled region that scrolls sideways, or is stacked."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    for path in EVERY_PATH:
        page.goto(live_server + path)
        wait_until(page, READY)
        for region in page.query_selector_all(".table-scroll"):
            assert region.get_attribute("tabindex") == "0"
            assert region.get_attribute("aria-label")
            stacked = "stack" in (region.get_attribute("class") or "").split()
            overflow = region.evaluate("(element) => getComputedStyle(element).overflowX")
            assert overflow == ("visible" if stacked else "auto")
    context.close()


# Every table on a phone: either stacked (every cell in sight, its text within it, each value after its column's
# name) or scrolled sideways under a first column that stays in sight. Collapsed sections are opened first.
KEY_COLUMN_HIDDEN = """() => {
  document.querySelectorAll('details').forEach((details) => { details.open = true; });
  const problems = [];
  for (const region of document.querySelectorAll('.table-scroll')) {
    const name = region.getAttribute('aria-label');
    const rows = [...region.querySelectorAll('tbody tr')];
    if (region.classList.contains('stack')) {
      for (const row of rows) for (const cell of row.children) {
        const box = cell.getBoundingClientRect();
        const off = box.left < 0 || box.right > window.innerWidth + 1;
        if (box.width && off) problems.push(`${name}: a cell off screen`);
        // a long identifier (a published sweep's id has no space to break at) must break inside its card
        const spilled = box.width && cell.scrollWidth > cell.clientWidth + 1;
        if (spilled) problems.push(`${name}: text wider than its cell: ${cell.textContent.trim().slice(0, 60)}`);
        if (cell.tagName === 'TD' && !cell.dataset.label) problems.push(`${name}: a cell without its column's name`);
      }
      if (getComputedStyle(region.querySelector('thead')).display !== 'none') problems.push(`${name}: header shown`);
      continue;
    }
    region.scrollLeft = region.scrollWidth;
    const edge = region.getBoundingClientRect().left;
    for (const row of region.querySelectorAll('tr')) {
      const box = row.firstElementChild.getBoundingClientRect();
      if (box.width && box.left < edge - 1) problems.push(`${name}: its first column scrolls out of sight`);
    }
    region.scrollLeft = 0;
  }
  return [...new Set(problems)];
}"""


@pytest.mark.parametrize("path", EVERY_PATH)
def test_the_key_column_of_every_table_stays_in_sight_on_a_phone(browser: Browser, live_server: str, path: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(live_server + path)
    wait_until(page, READY)
    assert page.evaluate(KEY_COLUMN_HIDDEN) == []
    context.close()


@pytest.mark.parametrize("path", PATHS)
def test_every_nav_link_is_in_sight_on_a_phone(browser: Browser, live_server: str, path: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(live_server + path)
    wait_until(page, READY)
    boxes = page.eval_on_selector_all(".site-nav a", "els => els.map((a) => a.getBoundingClientRect().toJSON())")
    assert len(boxes) == len(PATHS) + 1
    assert all(box["left"] >= 0 and box["right"] <= 390 and box["width"] > 0 for box in boxes)
    assert page.evaluate(
        "(() => { const nav = document.querySelector('.site-nav'); return nav.scrollWidth <= nav.clientWidth; })()"
    )
    # The header stays in view, so it must leave most of the screen to the page.
    assert page.evaluate("document.querySelector('.site-header').getBoundingClientRect().height") < 844 / 6
    # one compact line, the same on every page: at most 64 px, every link on the brand's line
    assert page.evaluate("document.querySelector('.site-header').getBoundingClientRect().height") <= 64
    brand = page.locator(".site-header .brand").bounding_box()
    assert brand is not None
    middle = brand["y"] + brand["height"] / 2
    assert all(box["top"] <= middle <= box["bottom"] for box in boxes), "the nav wraps under the brand"
    context.close()


@pytest.mark.parametrize("path", PATHS)
def test_sliders_are_touch_targets_on_a_phone(browser: Browser, live_server: str, path: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(live_server + path)
    wait_until(page, READY)
    heights = page.eval_on_selector_all(
        "input[type=range]", "els => els.map((e) => [e.id, e.getBoundingClientRect().height])"
    )
    assert heights or path not in ("/", "/exact"), "the demo and /exact have sliders"
    assert all(height >= 32 for _, height in heights if height > 0), heights
    context.close()


# ×2.04 or 2.04x or 1 x H100, on one line (a table's cells are lines of their own in the text).
MULTIPLICATION = re.compile(r"×[ \u00a0]?\d|\d(?:\.\d+)?[ \u00a0]?x\b")


@pytest.mark.parametrize(
    ("path", "factors"),
    [
        ("/batch", True),
        ("/batch?model=dense-70b&hw=h100-sxm&devices=1", True),
        ("/exact", False),
        ("/decide", True),
        ("/decide?engine=trtllm", True),
    ],
)
def test_factors_are_written_with_the_multiplication_sign(
    page: Page, live_server: str, path: str, factors: bool
) -> None:
    """2.04× and 1 × H100, as on the demo: never 2.04x or 1 x H100."""
    page.goto(live_server + path)
    wait_until(page, READY)
    page.evaluate("document.querySelectorAll('details').forEach((details) => { details.open = true; })")
    text = page.inner_text("main")
    assert MULTIPLICATION.findall(text) == []
    assert bool(re.search(r"\d\.\d\d×", text)) is factors
    if "devices=1" in path:
        assert "1 × H100 SXM" in text


TERMS = {
    "/": ["c-ops"],
    "/batch": ["v-k"],
    "/exact": ["chi-square"],
    "/decide": ["wilson", "chi-square", "tau", "sps", "pld", "positional", "tree-budget"],
}


@pytest.mark.parametrize("path", list(TERMS))
def test_terms_are_explained_on_hover_and_on_focus(page: Page, live_server: str, watch: PageWatch, path: str) -> None:
    page.goto(live_server + path)
    wait_until(page, READY)
    if page.locator("details#other-options:not([open]) > summary").count():
        page.click("#other-options > summary")  # /decide folds its draft sources and trees under "other options"
    for term in TERMS[path]:
        selector = f".term[data-term='{term}']"
        wait_until(page, f'document.querySelector("{selector}") !== null')
        element = page.locator(selector).first
        assert element.get_attribute("tabindex") == "0"
        assert element.get_attribute("aria-describedby") == "glossary-tip"
        element.focus()
        tip = page.locator("#glossary-tip")
        assert tip.is_visible() and tip.get_attribute("data-term") == term
        assert tip.get_attribute("role") == "tooltip" and len(tip.text_content() or "") > 80
        page.keyboard.press("Escape")
        assert not tip.is_visible()
        element.hover()
        assert tip.is_visible() and tip.get_attribute("data-term") == term
        page.mouse.move(0, 0)
    assert watch.console_errors == []


def test_a_term_s_explanation_fits_a_phone(browser: Browser, live_server: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(live_server + "/")
    wait_until(page, READY)
    page.locator(".term[data-term='c-ops']").tap()
    box = page.locator("#glossary-tip").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    context.close()
