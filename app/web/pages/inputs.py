"""The pages' controls, generated from the declarations of app.service.inputs: the label, the bounds, the
default and the choices are the API's and the command line's."""

from __future__ import annotations

from typing import Any

from app.service.inputs import Input
from app.web.pages.controls import Control, Options, Value


def _plain(value: Value | None) -> Value | None:
    """50.0 as 50, as addresses write it."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def control(item: Input, default: Value | None = None, **page: Any) -> Control:
    """The page's control of one input: a select for choices (read when the page is built), a text box for text,
    a number box within the bounds otherwise.  ``default`` is the page's own where it differs from the input's
    (the page opens on another question); ``page`` sets what only the page has (its help, step, older keys)."""
    value = _plain(item.default if default is None else default)
    fields: dict[str, Any] = {"label": item.label, "legacy": item.legacy}
    if item.choices is not None:
        fields.update(kind="select", options=Options(item.options))
    elif item.kind is str:
        fields.update(kind="text", max_length=item.max_length or 0, known=item.known)
        value = "" if value is None else value
    else:
        integer = item.kind is int
        fields.update(kind="number", low=item.low, high=item.high, step=1 if integer else None, integer=integer)
    fields.update(page)
    return Control(item.name, default=value, **fields)
