"""What a page is: its address, the question it answers, its controls and the view it is built from.

A view is one JSON-ready dictionary built in Python from the model layer: numbers, display strings,
tables and chart figures.  Jinja renders the page's first paint from it, ``/api/v1/views/<name>``
serves the same dictionary as the page's JSON twin, and ``static/js/driver.js`` patches the page
from it when a control changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.service.inputs import link
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
    # Long texts a POST to /api/v1/views/<name> may carry in its JSON body (a pasted scrape); never in the URL.
    body_controls: Sequence[Control] = ()
    legacy_keys: tuple[str, ...] = ()  # URL keys (or prefixes ending in _) of the one-page version that belong here
    nav_short: str = ""  # the nav link's text on a phone, where the whole nav is one line (``nav`` when empty)

    @property
    def nav_compact(self) -> str:
        return self.nav_short or self.nav

    def owns(self, key: str) -> bool:
        return any(key == old or (old.endswith("_") and key.startswith(old)) for old in self.legacy_keys)

    def view(self, query: Mapping[str, str], strict: bool, body: Mapping[str, str] | None = None) -> View:
        """The page's view for a query (and posted texts); strict reading raises ControlError naming the label."""
        reading = read_controls(self.controls, query, strict)
        if body is not None:
            texts = {control.name: control.read(body.get(control.name), strict)[0] for control in self.body_controls}
            reading = replace(reading, body={name: str(text) for name, text in texts.items()})
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
        return link(path, state)

    def renamed(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]] | None:
        """The query with older URL keys of this page's controls under their names, or None if it has none."""
        items = list(items)
        olds = {old for control in self.controls for old in control.legacy}
        if not any(key in olds for key, _ in items):
            return None
        present = {key for key, _ in items}
        renamed = []
        for key, value in items:
            if key not in olds:
                renamed.append((key, value))
                continue
            # One older key may hold several controls' values (a list of edits): each control takes its own.
            for control in self.controls:
                new = control.from_legacy(value) if key in control.legacy and control.name not in present else None
                if new is not None:
                    renamed.append((control.name, new))
        return renamed

    def defaults(self) -> dict[str, str]:
        return {control.name: str(control.default) for control in self.controls}
