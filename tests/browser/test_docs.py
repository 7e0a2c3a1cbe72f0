from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.conftest import PageWatch

pytestmark = pytest.mark.browser


def test_api_docs_render_from_this_origin(page: Page, live_server: str, watch: PageWatch) -> None:
    page.goto(live_server + "/docs")
    page.wait_for_selector(".swagger-ui .opblock-summary-path")
    paths = page.eval_on_selector_all(".opblock-summary-path", "els => els.map(e => e.textContent.trim())")
    assert any(path.endswith("/api/v1/speedup") for path in paths)
    assert watch.foreign_requests == []
    assert watch.console_errors == []


def test_the_docs_have_the_nav_back_to_the_app(page: Page, live_server: str, watch: PageWatch) -> None:
    page.goto(live_server + "/docs")
    page.wait_for_selector(".swagger-ui .opblock-summary-path")
    links = page.eval_on_selector_all(".site-nav a", "els => els.map((a) => a.getAttribute('href'))")
    assert links[:4] == ["/", "/batch", "/exact", "/decide"]
    assert page.get_attribute(".site-nav a[aria-current='page']", "href") == "/docs"
    summaries = page.eval_on_selector_all(
        ".opblock",
        "els => els.map((e) => e.querySelector('.opblock-summary-path').textContent.trim() + ' ' +"
        " (e.querySelector('.opblock-summary-description')?.textContent || ''))",
    )
    assert any(text.startswith("/api/v1/views/demo Page / as JSON") for text in summaries), summaries
    assert not any("Get Expected Tokens" in text for text in summaries)
    assert page.locator(".opblock-post").count() >= 3
    page.click(".site-nav >> text=Demo")
    page.wait_for_url(live_server + "/")
    assert watch.console_errors == [] and watch.foreign_requests == []


def test_an_unknown_page_shows_the_nav(page: Page, live_server: str, watch: PageWatch) -> None:
    response = page.goto(live_server + "/nothing-here")
    assert response is not None and response.status == 404
    assert page.text_content("h1") == "No page here"
    assert page.locator(".site-nav a").count() >= 5
    page.click("main >> text=Exactness and real text")
    page.wait_for_url(live_server + "/exact")
    watch.console_errors[:] = [message for message in watch.console_errors if "404" not in message]
    assert watch.console_errors == [] and watch.foreign_requests == []
