"""A drag on the demo in the real Chromium: the script time each `input` event costs, against Plotly.react alone.

Measured inside the page, not through the test driver.  A drag is replayed as short drags of 6 animation frames
with one `input` event on #k per frame (what a mouse or finger produces), and for each drag the page's own time per
event is summed: the synchronous listeners of each event (timed around `dispatchEvent`) plus what the page does
outside them (the rest of an update, or an update it deferred to the next animation frame), which it reports itself
as the User Timing measure `specdec:input-frame`.  The bound, in the same run and on the same element, is
`Plotly.react` alone, taken in the frame after each drag (from that drag's last figure back to the one before it):
redrawing the curve is the one thing a drag cannot avoid, so the page's own code may cost at most as much again
(ratio <= 2).  Medians of 40 drags.

Then the same with two events per frame (a fast mouse or a key held down): coalesced, the two events of a frame cost
one update, so the time per event drops well below one Plotly.react.

The view request each drag ends with (debounced: it never starts while the drag goes on) is held unanswered, so
that the page's repaint from it and the run's new animation do not run between the drags.
"""

from __future__ import annotations

import statistics
from typing import Any

from tests.support import CHROMIUM_FLAGS, chromium_path, free_port, start_server, stop_server, wait_until

CHUNKS = 40  # short drags, each followed by one Plotly.react alone
FRAMES_PER_CHUNK = 6
BOUND = 2.0
CURVE_READY = "document.querySelector('#curve')?.dataset.ready === '1'"

DRAG = """
async ([chunks, framesPerChunk, perFrame]) => {
  const slider = document.getElementById("k");
  const curve = document.getElementById("curve");
  const config = {
    displaylogo: false, responsive: true, displayModeBar: "hover",
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"],
  };
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
  const settle = (value) => new Promise((resolve) => {
    if (curve.dataset.k === value) { resolve(); return; }
    const observer = new MutationObserver(() => {
      if (curve.dataset.k === value) { observer.disconnect(); resolve(); }
    });
    observer.observe(curve, { attributes: true, attributeFilter: ["data-k"] });
  });
  const overlap = (start, end, windows) => windows.reduce(
    (sum, [from, to]) => sum + Math.max(0, Math.min(end, to) - Math.max(start, from)), 0);
  const perEvent = [];
  const react = [];
  let previous = null;
  let value = Number(slider.value);
  for (let chunk = 0; chunk < chunks; chunk += 1) {
    await frame();
    performance.clearMeasures("specdec:input-frame");
    const windows = [];
    for (let f = 0; f < framesPerChunk; f += 1) {
      if (f > 0) await frame();
      for (let j = 0; j < perFrame; j += 1) {
        value = value >= 14 ? 1 : value + 1;
        const start = performance.now();
        slider.value = String(value);
        slider.dispatchEvent(new Event("input", { bubbles: true }));
        windows.push([start, performance.now()]);
      }
    }
    await settle(String(value));
    await new Promise((resolve) => setTimeout(resolve, 0)); // the last update's measure is taken when it ends
    // The events' listeners, and whatever each update did outside them (the rest of it, or all of it when it
    // waited for the next frame).
    let spent = windows.reduce((sum, [start, end]) => sum + end - start, 0);
    for (const entry of performance.getEntriesByName("specdec:input-frame")) {
      const end = entry.startTime + entry.duration;
      spent += entry.duration - overlap(entry.startTime, end, windows);
    }
    perEvent.push(spent / windows.length);
    const drawn = JSON.parse(JSON.stringify({ data: curve.data, layout: curve.layout }));
    if (previous) {
      // The bound, in the next frame: Plotly.react alone from this figure back to the one before it.
      await frame();
      const start = performance.now();
      await window.Plotly.react(curve, previous.data, previous.layout, config);
      react.push(performance.now() - start);
    }
    previous = drawn;
  }
  return [perEvent, react];
}
"""


def drag(page: Any, per_frame: int) -> tuple[list[float], list[float]]:
    """(the page's milliseconds per input event, Plotly.react alone's milliseconds per redraw), interleaved in
    time so that the rest of the machine weighs on both alike."""
    handler, react = page.evaluate(DRAG, [CHUNKS, FRAMES_PER_CHUNK, per_frame])
    page.wait_for_timeout(1000)  # the drag's one view request lands and is painted
    return handler, react


def main() -> None:
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = start_server(port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/")
            wait_until(page, CURVE_READY, timeout=30)
            page.wait_for_load_state("networkidle")
            wait_until(page, "document.getElementById('run').dataset.cycles !== undefined", timeout=30)
            # The view each drag ends with is held: its redraw of every chart and the run's new animation would
            # otherwise run between the drags and weigh on them.
            page.route("**/api/v1/views/**", lambda route: None)
            drag(page, 1)  # warm-up: the JIT, Plotly's first layout
            results = {per_frame: drag(page, per_frame) for per_frame in (1, 2)}
            browser.close()
    finally:
        stop_server(server)

    for per_frame, (handler, react) in results.items():
        page_ms, react_ms = statistics.median(handler), statistics.median(react)
        ratio = page_ms / react_ms
        print(
            f"drag on #k, {per_frame} input event(s) per frame: the page's script {page_ms:.2f} ms per event "
            f"(median of {len(handler)} drags of {FRAMES_PER_CHUNK} frames; p90 "
            f"{sorted(handler)[int(0.9 * len(handler))]:.2f} ms); "
            f"Plotly.react alone {react_ms:.2f} ms per redraw; ratio {ratio:.2f} (bound {BOUND:g})"
        )
        print(f"RATIO drag_input_{per_frame}_per_frame {page_ms / 1e3:.6f} {react_ms / 1e3:.6f} {ratio:.3f}")
        if ratio > BOUND:
            raise SystemExit(f"an input event costs {ratio:.2f} times Plotly.react alone (bound {BOUND:g})")


if __name__ == "__main__":
    main()
