"""The pages' controls, generated from the declarations of app.service.inputs: the label, the bounds, the
default and the choices are the API's and the command line's."""

from __future__ import annotations

from typing import Any

from app.service.inputs import Input
from app.web.pages.controls import Control, Options, Value


def _plain(value: Value | None) -> Value | None:
    """50.0 as 50, as addresses write it."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def control(
    item: Input, default: Value | None = None, name: str | None = None, make: type[Control] = Control, **page: Any
) -> Control:
    """The page's control of one input: a select for choices (read when the page is built), a text box for text,
    a number box within the bounds otherwise.  ``default`` is the page's own where it differs from the input's
    (the page opens on another question); ``name`` the page's key where one page shows two inputs of one name;
    ``make`` a kind of control that reads its value its own way; ``page`` sets what only the page has (its help,
    step, older keys, the values a select offers); its bounds are the input's, a slider's its ``slider`` span."""
    if {"low", "high"} & page.keys():
        raise ValueError(f"{item.name}: a page's bounds are the input's, a slider's its declared slider span")
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
    if fields["kind"] == "range" and item.slider is not None:
        fields.update(low=item.slider[0], high=item.slider[1])
    if fields["kind"] == "range" and item.kind is float and value is not None:
        value = float(value)  # a slider's value keeps its point (its readout shows the decimals)
    if fields["kind"] == "select" and item.choices is None:  # the page offers some values of a number
        fields.update(low=None, high=None, step=None, integer=False)
        value = None if value is None else str(value)  # a select's values are its options' texts
    return make(name or item.name, default=value, **fields)
