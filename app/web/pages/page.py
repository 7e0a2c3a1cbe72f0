"""What a page is: its address, the question it answers, its controls and the view it is built from.

A view is one JSON-ready dictionary built in Python from the model layer: numbers, display strings,
tables and chart figures.  Jinja renders the page's first paint from it, ``/api/v1/views/<name>``
serves the same dictionary as the page's JSON twin, and ``static/js/driver.js`` patches the page
from it when a control changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from app.web.pages.controls import Control, Reading, changed_from_defaults, read_controls

View = dict[str, Any]


@dataclass(frozen=True)
class Page:
    name: str  # the view's name, /api/v1/views/<name>
    path: str  # the page's address
    nav: str  # the nav link's text
    title: str  # the page's heading
    question: str  # the one line the page opens with
    template: str
    controls: Sequence[Control]
    build: Callable[[Reading], View]
    legacy_keys: tuple[str, ...] = ()  # URL keys (or prefixes ending in _) of the one-page version that belong here
    # A section of the one-page version not yet rebuilt on a view: its first paint from the URL.
    legacy_context: Callable[[Mapping[str, str]], dict[str, Any]] | None = None

    def owns(self, key: str) -> bool:
        return any(key == old or (old.endswith("_") and key.startswith(old)) for old in self.legacy_keys)

    def view(self, query: Mapping[str, str], strict: bool) -> View:
        """The page's view for a query; strict reading raises ControlError naming the control's label."""
        reading = read_controls(self.controls, query, strict)
        view = self.build(reading)
        state = changed_from_defaults(self.controls, reading)
        view["page"] = self.name
        view["notes"] = reading.notes
        view["controls"] = {
            control.name: {"value": reading[control.name], "text": control.shown(reading[control.name])}
            for control in self.controls
        }
        view.setdefault("links", {})
        view["links"]["self"] = self.address(state)
        view["links"]["json"] = self.address(state, json=True)
        return view

    def address(self, state: Mapping[str, str], json: bool = False) -> str:
        path = f"/api/v1/views/{self.name}" if json else self.path
        return f"{path}?{urlencode(state)}" if state else path

    def renamed(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]] | None:
        """The query with older URL keys of this page's controls under their names, or None if it has none."""
        names = {old: control.name for control in self.controls for old in control.legacy}
        items = list(items)
        if not any(key in names for key, _ in items):
            return None
        present = {key for key, _ in items}
        return [(names.get(key, key), value) for key, value in items if names.get(key) not in present]

    def defaults(self) -> dict[str, str]:
        return {control.name: str(control.default) for control in self.controls}
