"""Embedding for real: a host page on another origin iframes the demo, as a lab hub would."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Frame, Page

from tests.support import ROOT, free_port, start_server, stop_server, wait_until

pytestmark = pytest.mark.browser

EMBED_QUERY = "/embed?k=4&p=0.8&c=0.1"
INITIAL_IFRAME_HEIGHT = 150
CHART_DRAWN = (
    "document.querySelector('#curve')?.dataset.ready === '1'"
    " && document.querySelectorAll('#curve .main-svg').length > 0"
)

HOST_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Lab hub</title><link rel="icon" href="data:,"></head>
<body>
<h1>Lab hub</h1>
<iframe id="demo" title="specdec-lab demo" src="__SRC__"
        style="width: 900px; height: __HEIGHT__px; border: 0"></iframe>
<script>
  const demoOrigin = __ORIGIN__;
  const frame = document.getElementById("demo");
  window.messages = [];
  window.addEventListener("message", (event) => {
    window.messages.push({ origin: event.origin, fromFrame: event.source === frame.contentWindow, data: event.data });
    if (event.origin !== demoOrigin || event.source !== frame.contentWindow) return;
    if (event.data && event.data.type === "specdec-lab:height" && event.data.height > 0) {
      frame.style.height = event.data.height + "px";
    }
  });
</script>
</body></html>
"""


@dataclass
class HostSite:
    """A plain web page on its own port (its own origin) that embeds the demo."""

    demo_base: str
    host: str = "localhost"
    port: int = field(default_factory=free_port)
    query: str = EMBED_QUERY

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def page_html(self) -> bytes:
        demo_origin = "{0.scheme}://{0.netloc}".format(urlsplit(self.demo_base))
        text = (
            HOST_PAGE.replace("__SRC__", self.demo_base + self.query)
            .replace("__HEIGHT__", str(INITIAL_IFRAME_HEIGHT))
            .replace("__ORIGIN__", json.dumps(demo_origin))
        )
        return text.encode()


@pytest.fixture
def serve_host() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def serve(demo_base: str, port: int | None = None, query: str = EMBED_QUERY, html: bytes | None = None) -> HostSite:
        site = HostSite(demo_base, query=query) if port is None else HostSite(demo_base, port=port, query=query)
        body = html if html is not None else site.page_html()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status = 200 if self.path == "/" else 404
                self.send_response(status)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(body) if status == 200 else 0))
                self.end_headers()
                if status == 200:
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", site.port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return site

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


@dataclass
class Visit:
    page: Page
    console_errors: list[str]
    requests: list[str]


@pytest.fixture
def visit(browser: Browser) -> Iterator[Any]:
    contexts = []

    def open_host(site: HostSite) -> Visit:
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        contexts.append(context)
        page = context.new_page()
        result = Visit(page, [], [])

        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error":
                result.console_errors.append(message.text)

        page.on("console", on_console)
        page.on("pageerror", lambda error: result.console_errors.append(str(error)))
        page.on("request", lambda request: result.requests.append(request.url))
        page.goto(site.origin + "/")
        return result

    yield open_host
    for context in contexts:
        context.close()


def demo_frame(page: Page, demo_base: str) -> Frame:
    def find() -> Frame | None:
        return next((frame for frame in page.frames if frame.url.startswith(demo_base + "/embed")), None)

    wait_until(page, "document.getElementById('demo').contentWindow !== null")
    for _ in range(200):
        frame = find()
        if frame is not None:
            return frame
        page.wait_for_timeout(50)
    raise AssertionError(f"no frame from {demo_base}; frames: {[frame.url for frame in page.frames]}")


def test_demo_renders_inside_a_cross_origin_iframe_and_sizes_it(live_server: str, serve_host: Any, visit: Any) -> None:
    site = serve_host(live_server)
    assert urlsplit(site.origin).netloc != urlsplit(live_server).netloc
    seen = visit(site)
    page = seen.page
    frame = demo_frame(page, live_server)

    wait_until(frame, CHART_DRAWN)
    assert frame.evaluate("document.body.classList.contains('embed')")
    assert frame.evaluate("document.querySelector('.site-header') === null")
    assert frame.input_value("#k") == "4"
    assert frame.input_value("#p") == "0.8"
    assert frame.text_content("#tokens") == "3.36"  # 1 + .8 + .64 + .512 + .4096

    wait_until(page, "window.messages.some((m) => m.data && m.data.type === 'specdec-lab:height')")
    messages = page.evaluate("window.messages")
    heights = [m for m in messages if m["data"].get("type") == "specdec-lab:height"]
    assert all(m["origin"] == urlsplit(live_server).scheme + "://" + urlsplit(live_server).netloc for m in heights)
    assert all(m["fromFrame"] for m in heights)
    assert all(isinstance(m["data"]["height"], int) and m["data"]["height"] > 0 for m in heights)

    # The parent applied the last height; the frame now shows all of the demo without an inner scrollbar.
    wait_until(page, f"document.getElementById('demo').getBoundingClientRect().height > {INITIAL_IFRAME_HEIGHT}")
    page.wait_for_timeout(300)  # let any follow-up resize settle
    last = page.evaluate("window.messages.filter((m) => m.data.type === 'specdec-lab:height').at(-1).data.height")
    iframe_height = page.evaluate("document.getElementById('demo').getBoundingClientRect().height")
    assert iframe_height == pytest.approx(last, abs=1)
    content_height = frame.evaluate("document.documentElement.scrollHeight")
    assert content_height <= iframe_height + 1
    assert iframe_height > 400, "the whole demo, sliders, readouts and charts, is taller than this"

    # A host that listens late can ask for the height again.
    page.evaluate("window.messages = []")
    page.evaluate(
        "document.getElementById('demo').contentWindow.postMessage({type: 'specdec-lab:request-height'}, '*')"
    )
    wait_until(page, "window.messages.some((m) => m.data && m.data.type === 'specdec-lab:height')")

    # Moving a slider inside the frame works like on the page itself.
    frame.fill("#k", "2")
    wait_until(frame, "document.getElementById('tokens').textContent === '2.44'")

    assert seen.console_errors == []
    allowed = {urlsplit(site.origin).netloc, urlsplit(live_server).netloc}
    assert [url for url in seen.requests if urlsplit(url).netloc not in allowed] == []


@pytest.fixture(scope="module")
def restricted_server() -> Iterator[tuple[str, int]]:
    """A demo that only lets one named origin frame it (SPECDEC_FRAME_ANCESTORS)."""
    allowed_port = free_port()
    port = free_port()
    process = start_server(
        port, extra_env={"SPECDEC_FRAME_ANCESTORS": json.dumps([f"http://localhost:{allowed_port}"])}
    )
    yield f"http://127.0.0.1:{port}", allowed_port
    stop_server(process)


def test_frame_ancestors_setting_blocks_other_origins(
    restricted_server: tuple[str, int], serve_host: Any, visit: Any
) -> None:
    demo_base, _ = restricted_server
    site = serve_host(demo_base)  # on a port the setting does not name
    seen = visit(site)
    page = seen.page
    wait_until(page, "document.readyState === 'complete'")
    page.wait_for_timeout(1000)
    frames = [frame for frame in page.frames if frame != page.main_frame]
    assert len(frames) == 1
    blocked = frames[0]
    assert not blocked.url.startswith(demo_base), f"frame loaded the demo: {blocked.url}"
    assert page.evaluate("window.messages.length") == 0
    assert any("frame-ancestors" in message for message in seen.console_errors), seen.console_errors


def test_frame_ancestors_setting_admits_the_named_origin(
    restricted_server: tuple[str, int], serve_host: Any, visit: Any
) -> None:
    demo_base, allowed_port = restricted_server
    site = serve_host(demo_base, port=allowed_port)
    seen = visit(site)
    frame = demo_frame(seen.page, demo_base)
    wait_until(frame, CHART_DRAWN)
    wait_until(seen.page, "window.messages.some((m) => m.data && m.data.type === 'specdec-lab:height')")
    assert seen.console_errors == []


def heights_posted(page: Page) -> list[int]:
    heights: list[int] = page.evaluate(
        "window.messages.filter((m) => m.data && m.data.type === 'specdec-lab:height').map((m) => m.data.height)"
    )
    return heights


def test_height_does_not_change_while_the_run_animates(live_server: str, serve_host: Any, visit: Any) -> None:
    site = serve_host(live_server)
    seen = visit(site)
    frame = demo_frame(seen.page, live_server)
    wait_until(frame, CHART_DRAWN)
    wait_until(frame, "document.querySelector('#run-tokens .token.pending') !== null")  # the run is animating
    wait_until(seen.page, "window.messages.some((m) => m.data && m.data.type === 'specdec-lab:height')")
    settled = heights_posted(seen.page)[-1]
    animating = []
    for _ in range(20):
        seen.page.wait_for_timeout(100)
        animating.append(frame.evaluate("document.querySelectorAll('#run-tokens .token:not(.pending)').length"))
    assert animating[0] < animating[-1], "the run was revealed token by token during the check"
    assert set(heights_posted(seen.page)[-1:]) == {settled}
    assert frame.evaluate("Math.ceil(document.documentElement.getBoundingClientRect().height)") == settled


def test_parts_pick_a_compact_embed(live_server: str, serve_host: Any, visit: Any) -> None:
    site = serve_host(live_server, query="/embed?k=4&p=0.8&c=0.1&parts=readouts,curve")
    seen = visit(site)
    frame = demo_frame(seen.page, live_server)
    wait_until(frame, CHART_DRAWN)
    assert frame.text_content("#tokens") == "3.36"
    assert frame.evaluate("document.getElementById('run') === null && document.getElementById('k') === null")
    wait_until(seen.page, "window.messages.some((m) => m.data && m.data.type === 'specdec-lab:height')")
    compact = heights_posted(seen.page)[-1]

    only_run = serve_host(live_server, query="/embed?k=4&p=0.8&c=0.1&parts=run")
    run_visit = visit(only_run)
    run_frame = demo_frame(run_visit.page, live_server)
    wait_until(run_frame, "document.querySelector('#run-tokens .token') !== null")
    assert run_frame.evaluate("document.getElementById('curve') === null && document.getElementById('tokens') === null")

    full = serve_host(live_server)
    full_visit = visit(full)
    wait_until(demo_frame(full_visit.page, live_server), CHART_DRAWN)
    wait_until(full_visit.page, "window.messages.some((m) => m.data && m.data.type === 'specdec-lab:height')")
    assert compact < heights_posted(full_visit.page)[-1] - 200
    assert seen.console_errors == [] and run_visit.console_errors == []


def test_links_in_an_embed_open_in_a_new_tab(live_server: str, serve_host: Any, visit: Any) -> None:
    site = serve_host(live_server)
    seen = visit(site)
    frame = demo_frame(seen.page, live_server)
    wait_until(frame, CHART_DRAWN)
    links = frame.eval_on_selector_all("a[href]", "els => els.map((a) => [a.target, a.rel, a.textContent.trim()])")
    assert links, "an embed has at least its way out"
    assert all(target == "_blank" and "noopener" in rel for target, rel, _ in links)
    opener = frame.get_attribute("text=Open in specdec-lab", "href") or ""
    assert urlsplit(opener).path == "/"
    assert dict(item.split("=") for item in urlsplit(opener).query.split("&")) == {"k": "4", "p": "0.8", "c": "0.1"}


def test_the_readme_host_snippet_sizes_the_frame(live_server: str, serve_host: Any, visit: Any) -> None:
    readme = (ROOT / "README.md").read_text()
    snippet = readme.split("<!-- host-snippet -->")[1].split("```html")[1].split("```")[0]
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(live_server))
    html = snippet.replace("https://specdec-lab.example.org", origin)
    head = '<head><meta charset="utf-8"><title>host</title></head>'
    document = f'<!doctype html><html lang="en">{head}<body>{html}</body></html>'
    site = serve_host(live_server, html=document.encode())
    seen = visit(site)
    wait_until(seen.page, "document.querySelector('iframe') !== null")
    frame = next(frame for _ in range(200) if (frame := _embed_frame(seen.page, live_server)) is not None)
    wait_until(frame, CHART_DRAWN)
    wait_until(seen.page, "document.querySelector('iframe').getBoundingClientRect().height > 400")
    content = frame.evaluate("Math.ceil(document.documentElement.getBoundingClientRect().height)")
    assert seen.page.evaluate("document.querySelector('iframe').getBoundingClientRect().height") == pytest.approx(
        content, abs=1
    )


def _embed_frame(page: Page, demo_base: str) -> Frame | None:
    page.wait_for_timeout(50)
    return next((frame for frame in page.frames if frame.url.startswith(demo_base + "/embed")), None)


def test_an_unknown_part_is_named_in_the_frame(live_server: str, serve_host: Any, visit: Any) -> None:
    site = serve_host(live_server, query="/embed?k=4&parts=readout,curve")
    seen = visit(site)
    frame = demo_frame(seen.page, live_server)
    wait_until(frame, CHART_DRAWN)
    note = frame.text_content(".notes") or ""
    assert "no part named `readout` (did you mean `readouts`?)" in note and "showing curve" in note
    assert frame.evaluate("document.querySelector('.notes').checkVisibility()")
    assert frame.evaluate("document.getElementById('tokens') === null")
    assert seen.console_errors == []


def test_an_embed_asks_only_for_what_it_shows(live_server: str, serve_host: Any, visit: Any) -> None:
    site = serve_host(live_server, query="/embed?k=4&p=0.8&parts=controls,curve")
    seen = visit(site)
    frame = demo_frame(seen.page, live_server)
    wait_until(frame, CHART_DRAWN)
    views: list[str] = []
    seen.page.on("request", lambda request: "/api/v1/views/" in request.url and views.append(request.url))
    frame.fill("#k", "2")
    wait_until(frame, "document.getElementById('curve').dataset.k === '2'")
    for _ in range(100):
        if views:
            break
        seen.page.wait_for_timeout(50)
    assert len(views) == 1 and urlsplit(views[0]).path == "/api/v1/views/embed"
    query = dict(item.split("=") for item in urlsplit(views[0]).query.split("&"))
    assert query == {"k": "2", "p": "0.8", "parts": "controls%2Ccurve"}
    wait_until(frame, "!document.querySelector('[data-results].stale')")
    assert frame.evaluate("document.getElementById('run') === null && document.getElementById('histogram') === null")
    assert seen.console_errors == []
