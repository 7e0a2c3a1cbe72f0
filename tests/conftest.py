"""Shared fixtures: the real app under uvicorn, and Playwright on the system Chromium."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient
from hypothesis import settings

from app.web.main import app
from tests import live_engine
from tests.support import CHROMIUM_FLAGS, chromium_path, free_port, start_server, stop_server

# No per-example deadline: a shared 2-core machine is not a benchmark. Under CI the examples are
# derandomised so that a run is reproducible; locally they vary and keep finding new cases.
settings.register_profile("local", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "local")


@pytest.fixture(scope="session")
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def live_server() -> Iterator[str]:
    port = free_port()
    process = start_server(port)
    yield f"http://127.0.0.1:{port}"
    stop_server(process)


@pytest.fixture(params=live_engine.BUILDS)
def llama_build(request: pytest.FixtureRequest) -> Iterator[live_engine.Engine]:
    """The test once per llama.cpp build `make engine` builds: the servers it starts run that build."""
    with live_engine.using(request.param) as built:
        yield built


@dataclass
class PageWatch:
    """What a page did that a test may want to forbid."""

    console_errors: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def watch() -> PageWatch:
    return PageWatch()


@pytest.fixture
def page(browser: object, live_server: str, watch: PageWatch) -> Iterator[object]:
    from playwright.sync_api import Browser

    assert isinstance(browser, Browser)
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    new_page = context.new_page()
    own_origin = urlsplit(live_server).netloc
    new_page.on("console", lambda message: message.type == "error" and watch.console_errors.append(message.text))
    new_page.on("pageerror", lambda error: watch.console_errors.append(str(error)))

    def record(request: object) -> None:
        url = getattr(request, "url", "")
        parts = urlsplit(url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.netloc != own_origin:
            watch.foreign_requests.append(url)

    new_page.on("request", record)
    yield new_page
    context.close()
