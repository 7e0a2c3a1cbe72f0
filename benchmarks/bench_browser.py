"""The pages in the real Chromium: slider-to-readout time, page heights, and what a first and a repeat visit transfer.

Bounds, each measured side by side in one run against the real uvicorn server:
- slider to readout: from an `input` event on #k to the readouts rewritten and the curve redrawn with the new k,
  under 100 ms of emulated network latency (Chromium's network emulation through CDP: a lab page embedding a
  server that is far away), held against Plotly.react alone on the same traces and layout, replayed on the same
  element in the same order.  The demo's closed form runs in the browser, so the ratio is the page's own code
  and must stay at most 2.
- page heights: every page at 1366x900 against 3,000 px for the demo and 6,000 px for the others; at 390x844 reported.
- first load: bytes over the wire (Chromium's encodedDataLength: headers and compressed bodies) for the
  page and everything it loads, held against the decoded size of the same responses.
- repeat load: the same page visited again in the same browser profile, held against the first load;
  content-hashed assets are immutable, so only the HTML and the API calls should travel again.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from tests.support import CHROMIUM_FLAGS, chromium_path, free_port, start_server, stop_server, wait_until

SLIDER_ROUNDS = 30
PAUSE_MS = 700  # lets the debounced view request of each step finish before the next
LATENCY_MS = 100
PAGES = {"/": 3000, "/batch": 6000, "/exact": 6000, "/decide": 6000}
SIZES = ((1366, 900), (390, 844))
CURVE_READY = "document.querySelector('#curve')?.dataset.ready === '1'"

SLIDER_TO_REDRAW = """
async ([rounds, pauseMs]) => {
  const slider = document.getElementById("k");
  const curve = document.getElementById("curve");
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const times = [];
  const snapshots = [];
  for (let i = 0; i < rounds; i += 1) {
    const value = String(3 + (i % 7));
    const next = value === curve.dataset.k ? String(10 + (i % 3)) : value;
    const redrawn = new Promise((resolve) => {
      const observer = new MutationObserver(() => {
        if (curve.dataset.k === next) { observer.disconnect(); resolve(); }
      });
      observer.observe(curve, { attributes: true, attributeFilter: ["data-k"] });
    });
    const start = performance.now();
    slider.value = next;
    slider.dispatchEvent(new Event("input", { bubbles: true }));
    await redrawn;
    times.push(performance.now() - start);
    snapshots.push(JSON.parse(JSON.stringify({ data: curve.data, layout: curve.layout })));
    await pause(pauseMs);
  }
  window.__benchSnapshots = snapshots;
  return times;
}
"""

REACT_ALONE = """
async ([pauseMs]) => {
  const curve = document.getElementById("curve");
  const config = { displaylogo: false, responsive: true };
  const times = [];
  for (const snapshot of window.__benchSnapshots) {
    const start = performance.now();
    await window.Plotly.react(curve, snapshot.data, snapshot.layout, config);
    times.push(performance.now() - start);
    await new Promise((resolve) => setTimeout(resolve, Math.min(pauseMs, 50)));
  }
  return times;
}
"""


@dataclass
class Transfer:
    encoded: dict[str, float] = field(default_factory=dict)
    decoded: dict[str, float] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)
    cached: set[str] = field(default_factory=set)

    def on_response(self, event: dict[str, Any]) -> None:
        self.urls[event["requestId"]] = event["response"]["url"]
        if event["response"].get("fromDiskCache") or event["response"].get("fromPrefetchCache"):
            self.cached.add(event["requestId"])

    def on_data(self, event: dict[str, Any]) -> None:
        request = event["requestId"]
        self.decoded[request] = self.decoded.get(request, 0) + event["dataLength"]

    def on_finished(self, event: dict[str, Any]) -> None:
        self.encoded[event["requestId"]] = event["encodedDataLength"]

    def on_cache(self, event: dict[str, Any]) -> None:
        self.cached.add(event["requestId"])

    def total_encoded(self) -> int:
        return int(sum(self.encoded.values()))

    def total_decoded(self) -> int:
        return int(sum(self.decoded.values()))

    def largest(self) -> list[tuple[str, int]]:
        rows = [(_short(self.urls.get(request, "?")), int(size)) for request, size in self.encoded.items()]
        return sorted(rows, key=lambda row: -row[1])[:3]


def _short(url: str) -> str:
    path = "/" + url.split("/", 3)[-1] if url.count("/") >= 3 else url
    return path.rsplit("/", 1)[-1][:40] or path[:40]


def measure_transfer(page: Any, url: str, session: Any) -> Transfer:
    transfer = Transfer()
    handlers = {
        "Network.responseReceived": transfer.on_response,
        "Network.dataReceived": transfer.on_data,
        "Network.loadingFinished": transfer.on_finished,
        "Network.requestServedFromCache": transfer.on_cache,
    }
    for event, handler in handlers.items():
        session.on(event, handler)
    page.goto(url)
    wait_until(page, CURVE_READY, timeout=30)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(500)
    for event, handler in handlers.items():
        session.remove_listener(event, handler)
    return transfer


def measure_heights(browser: Any, base: str) -> dict[tuple[str, int], int]:
    heights = {}
    for width, height in SIZES:
        context = browser.new_context(viewport={"width": width, "height": height}, reduced_motion="reduce")
        page = context.new_page()
        for path in PAGES:
            page.goto(base + path)
            wait_until(page, "document.body.dataset.ready === '1'", timeout=30)
            page.wait_for_load_state("networkidle")
            heights[(path, width)] = int(page.evaluate("document.documentElement.scrollHeight"))
        context.close()
    return heights


def main() -> None:
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = start_server(port)
    base = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            page = context.new_page()
            session = context.new_cdp_session(page)
            session.send("Network.enable")
            first = measure_transfer(page, base + "/", session)
            repeat = measure_transfer(page, base + "/", session)

            wait_until(page, CURVE_READY)
            session.send(
                "Network.emulateNetworkConditions",
                {"offline": False, "latency": LATENCY_MS, "downloadThroughput": -1, "uploadThroughput": -1},
            )
            slider_ms: list[float] = page.evaluate(SLIDER_TO_REDRAW, [SLIDER_ROUNDS, PAUSE_MS])
            react_ms: list[float] = page.evaluate(REACT_ALONE, [PAUSE_MS])
            heights = measure_heights(browser, base)
            browser.close()
    finally:
        stop_server(server)

    slider = statistics.median(slider_ms) / 1e3
    react = statistics.median(react_ms) / 1e3
    print(
        f"slider to readout under {LATENCY_MS} ms latency: median {slider * 1e3:.1f} ms"
        f" (p90 {sorted(slider_ms)[int(0.9 * len(slider_ms))]:.1f} ms) over {len(slider_ms)} steps;"
        f" Plotly.react alone on the same data: median {react * 1e3:.1f} ms"
    )
    print(f"RATIO slider_to_readout_100ms {slider:.6f} {react:.6f} {slider / react:.3f}")
    for (path, width), height in heights.items():
        if width != SIZES[0][0]:  # the bounds are for the desktop; a phone's heights are reported
            print(f"page {path} at {width} px wide: {height} px tall")
            continue
        bound = PAGES[path]
        name = f"height_{path.strip('/') or 'demo'}_{width}"
        print(f"page {path} at {width} px wide: {height} px tall (bound {bound} px)")
        print(f"RATIO {name} {height} {bound} {height / bound:.3f}")

    first_bytes, first_decoded = first.total_encoded(), first.total_decoded()
    print(
        f"first load: {len(first.encoded)} responses, {first_bytes / 1024:.0f} KiB over the wire, "
        f"{first_decoded / 1024:.0f} KiB decoded; largest: "
        + ", ".join(f"{name} {size / 1024:.0f} KiB" for name, size in first.largest())
    )
    print(f"RATIO first_load_bytes {first_bytes} {first_decoded} {first_bytes / first_decoded:.3f}")
    repeat_bytes = repeat.total_encoded()
    print(
        f"repeat load: {len(repeat.encoded)} responses, {repeat_bytes / 1024:.0f} KiB over the wire, "
        f"{len(repeat.cached)} from the browser cache; largest: "
        + ", ".join(f"{name} {size / 1024:.1f} KiB" for name, size in repeat.largest())
    )
    print(f"RATIO repeat_load_bytes {repeat_bytes} {first_bytes} {repeat_bytes / first_bytes:.3f}")


if __name__ == "__main__":
    main()
