"""The pages' controls, generated from the declarations of app.service.inputs: the label, the bounds, the
default and the choices are the API's and the command line's."""

from __future__ import annotations

from typing import Any

from app.service.inputs import Input
from app.web.pages.controls import Control, Options, Value


def control(item: Input, default: Value | None = None, **page: Any) -> Control:
    """The page's control of one input: a select for choices (read when the page is built), a text box for text,
    a number box within the bounds otherwise.  ``default`` is the page's own where it differs from the input's
    (the page opens on another question); ``page`` sets what only the page has (its help, older keys)."""
    value = item.default if default is None else default
    if item.choices is not None:
        return Control(item.name, item.label, "select", value, options=Options(item.options), **page)
    if item.kind is str:
        return Control(
            item.name, item.label, "text", "" if value is None else value, max_length=item.max_length or 0, **page
        )
    integer = item.kind is int
    return Control(
        item.name, item.label, "number", value, item.low, item.high, 1 if integer else None, integer=integer, **page
    )
