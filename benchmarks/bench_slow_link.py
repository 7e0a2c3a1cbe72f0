"""The demo's first chart on a slow link: Plotly.js's partial bundle (what the app serves) against the full bundle.

Two real uvicorn servers, side by side in one run: the app as it is, and the app serving the full Plotly.js bundle
that the plotly package ships (the same Plotly.js version, patched in for this benchmark only; served gzipped,
as it has no brotli made at install beside it, while the app's partial bundle goes as brotli to Chromium).
Chromium emulates a 1.5 Mbps link with 150 ms of latency (CDP Network.emulateNetworkConditions) and an empty
cache; rounds interleave the two servers. Per load:
- first chart: from navigation to the demo's curve drawn (its data-ready), against the 3 s goal and against the
  full bundle's on the same link;
- longest main-thread task after the first paint (PerformanceObserver on `longtask`), against 200 ms.
Reported: the median of the rounds, with the lowest and highest.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import plotly

from tests.support import CHROMIUM_FLAGS, ROOT, chromium_path, free_port, stop_server

ROUNDS = 3
LINK = {"offline": False, "latency": 150, "downloadThroughput": 1_500_000 / 8, "uploadThroughput": 750_000 / 8}
FIRST_CHART_GOAL_MS = 3000.0
LONG_TASK_GOAL_MS = 200.0
FULL_BUNDLE = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
SERVE_FULL = (
    "import sys; from pathlib import Path; import app.web.core.assets as assets; "
    "assets.PLOTLY_BUNDLE = Path(sys.argv[1]); import uvicorn; "
    "uvicorn.run('app.web.main:app', host='127.0.0.1', port=int(sys.argv[2]), log_level='warning')"
)
OBSERVE = """
window.__longTasks = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.__longTasks.push([entry.startTime, entry.duration]);
}).observe({ type: "longtask", buffered: true });
"""
MEASURE = """
(() => {
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  const after = paint ? paint.startTime : 0;
  const tasks = window.__longTasks.filter(([start]) => start >= after).map(([, duration]) => duration);
  return { chart: window.__chartAt, longest: tasks.length ? Math.max(...tasks) : 0, paint: after };
})()
"""
CHART_TIME = """
new Promise((resolve) => {
  const chart = document.getElementById("curve");
  const done = () => { window.__chartAt = performance.now(); resolve(); };
  if (chart.dataset.ready === "1") return done();
  new MutationObserver((_, observer) => {
    if (chart.dataset.ready === "1") { observer.disconnect(); done(); }
  }).observe(chart, { attributes: true, attributeFilter: ["data-ready"] });
})
"""


def _start(full: bool) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    if full:
        command = [sys.executable, "-c", SERVE_FULL, str(FULL_BUNDLE), str(port)]
    else:
        command = [sys.executable, "-m", "uvicorn", "app.web.main:app", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ), stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            break
        time.sleep(0.1)
    stop_server(process)
    raise RuntimeError("the server did not start")


def _load(browser: object, base: str) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1366, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    page.add_init_script(OBSERVE)
    session = context.new_cdp_session(page)
    session.send("Network.enable")
    session.send("Network.setCacheDisabled", {"cacheDisabled": True})
    session.send("Network.emulateNetworkConditions", LINK)
    page.goto(base + "/", wait_until="commit", timeout=120_000)
    page.wait_for_function("document.getElementById('curve') !== null", timeout=120_000)
    page.evaluate(CHART_TIME)
    page.wait_for_timeout(1500)  # long tasks that follow the first chart (Plotly's start, the run's animation)
    measured: dict[str, float] = page.evaluate(MEASURE)
    context.close()
    return measured


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.0f} ms (from {min(values):.0f} to {max(values):.0f})"


def main() -> None:
    from playwright.sync_api import sync_playwright

    partial_server, partial = _start(full=False)
    full_server, full = _start(full=True)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
            for base in (partial, full):  # warm both servers (their first request builds the asset table)
                httpx.get(base + "/", timeout=60).raise_for_status()
            results: dict[str, list[dict[str, float]]] = {"partial": [], "full": []}
            for round_index in range(ROUNDS):
                order = (("partial", partial), ("full", full))
                for name, base in order if round_index % 2 == 0 else reversed(order):
                    results[name].append(_load(browser, base))
            browser.close()
    finally:
        stop_server(partial_server)
        stop_server(full_server)
    charts = {name: [run["chart"] for run in runs] for name, runs in results.items()}
    longest = {name: [run["longest"] for run in runs] for name, runs in results.items()}
    link = "1.5 Mbps / 150 ms"
    print(f"first chart on {link}: partial bundle {_spread(charts['partial'])}, full {_spread(charts['full'])}")
    print(f"longest task after first paint: partial {_spread(longest['partial'])}, full {_spread(longest['full'])}")
    partial_chart, full_chart = statistics.median(charts["partial"]), statistics.median(charts["full"])
    print(
        f"RATIO first_chart_slow_link {partial_chart:.0f} {FIRST_CHART_GOAL_MS:.0f} "
        f"{partial_chart / FIRST_CHART_GOAL_MS:.3f}"
    )
    print(f"RATIO first_chart_partial_vs_full {partial_chart:.0f} {full_chart:.0f} {partial_chart / full_chart:.3f}")
    worst = statistics.median(longest["partial"])
    print(f"RATIO longest_task_after_paint {worst:.0f} {LONG_TASK_GOAL_MS:.0f} {worst / LONG_TASK_GOAL_MS:.3f}")


if __name__ == "__main__":
    main()
