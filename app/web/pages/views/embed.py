"""The demo without the page's chrome, for an iframe: the parts `parts=` names, and only those computed.

Its JSON twin is /api/v1/views/embed (the demo's, with `parts`).  A name that is not a part is reported,
naming it: the JSON twin refuses it (422, by the label), the page shows the parts it knew with a note.  Its
"Open in specdec-lab" link is the full demo at / with the same state.
"""

from __future__ import annotations

from app.web.core.contract import nearest_name
from app.web.pages.controls import Control, Reading
from app.web.pages.page import Page, View
from app.web.pages.views import demo

DEFAULT_PARTS = ("controls", "readouts", "curve", "run")
PARTS = Control(
    "parts",
    "Parts",
    "text",
    ",".join(DEFAULT_PARTS),
    max_length=len(",".join(demo.PARTS)) * 2,
    help=f"the parts to show, comma-separated, among: {', '.join(demo.PARTS)}",
)


def chosen_parts(raw: str) -> tuple[tuple[str, ...], list[str]]:
    """(the known parts named, in the demo's order; the names that are not parts, as written)."""
    names = [name.strip() for name in raw.split(",") if name.strip()]
    return tuple(part for part in demo.PARTS if part in names), [name for name in names if name not in demo.PARTS]


def unknown_message(unknown: list[str]) -> str:
    """ "Parts: no part named `readout` (did you mean `readouts`?); the parts are controls, ..."."""
    named = []
    for name in unknown:
        guess = nearest_name(name, demo.PARTS)
        named.append(f"`{name}`" + (f" (did you mean `{guess}`?)" if guess and guess != name else ""))
    what = "no part named" if len(unknown) == 1 else "no parts named"
    return f"{PARTS.label}: {what} {', '.join(named)}; the parts are {', '.join(demo.PARTS)}"


def build(reading: Reading) -> View:
    parts, unknown = chosen_parts(reading.text("parts"))
    if unknown:
        shown = parts or DEFAULT_PARTS
        reading.correct(PARTS, ",".join(shown), unknown_message(unknown))
        parts = shown
    return demo.build_parts(reading, parts or DEFAULT_PARTS)


PAGE = Page(
    name="embed",
    path="/",  # where "Open in specdec-lab" leads: the full demo, with the same state
    nav="the demo to embed",
    title=demo.PAGE.title,
    question=demo.PAGE.question,
    template=demo.PAGE.template,
    controls=(*demo.CONTROLS, PARTS),
    build=build,
)
