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
