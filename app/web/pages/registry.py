"""Every page, in the order the nav lists them."""

from __future__ import annotations

from collections.abc import Iterable

from app.web.pages.page import Page
from app.web.pages.views import batch, decide, demo, exact, published

DEMO = demo.PAGE
PAGES: tuple[Page, ...] = (DEMO, batch.PAGE, exact.PAGE, decide.PAGE)
# Pages outside the nav, reached from the answers that cite them (/batch's accuracy links to /published).
LINKED_PAGES: tuple[Page, ...] = (published.PAGE,)


def page_for_legacy_keys(keys: Iterable[str]) -> Page | None:
    """The page whose state an address of the one-page version carries, if it is not the demo's."""
    demo_keys = {control.name for control in DEMO.controls} | {"embed", "parts"}
    for key in keys:
        if key in demo_keys:
            continue
        for page in PAGES[1:]:
            if page.owns(key):
                return page
    return None
