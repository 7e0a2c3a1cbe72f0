"""Refresh the README's screenshot: the real page, served by uvicorn, in the system Chromium."""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support import CHROMIUM_FLAGS, ROOT, chromium_path, free_port, start_server, stop_server, wait_until

OUTPUT = ROOT / "docs" / "screenshot.png"


def main() -> None:
    port = free_port()
    server = start_server(port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
            page = browser.new_page(viewport={"width": 1200, "height": 1080}, reduced_motion="reduce")
            page.goto(f"http://127.0.0.1:{port}/")
            wait_until(page, "document.querySelector('#curve')?.dataset.ready === '1'")
            page.wait_for_selector("#run-tokens .token")
            page.wait_for_timeout(500)
            page.screenshot(path=str(OUTPUT))  # the first screen: nav, question, sliders, readouts, curve
            browser.close()
    finally:
        stop_server(server)
    print(f"wrote {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
