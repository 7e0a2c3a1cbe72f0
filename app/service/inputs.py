"""One declaration per input: its name, on-screen label, type, bounds, default, help and older names.

The API's query parameters (app.web.api.inputs), the pages' controls (app.web.pages.inputs) and the command
line's options (app.cli.arguments) are generated from these declarations, so that a bound or a default is
written once.  Choices that come from a registry (the engines) are read each time they are asked for, so that
an engine registered later is offered everywhere.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import quote, urlencode

from app.model.limits import InputError

Scalar = float | int | str
# kept as written in an address, so that lists (0.9,0.5), decimals, paths and URLs stay readable; every other
# character (& = + # ? % and spaces among them) is percent-encoded
ADDRESS_SAFE = ",.-_~/:"


def number_list(name: str, text: str, limit: int) -> tuple[float, ...]:
    """The comma-separated numbers of input ``name``: finite, at most ``limit`` of them (none when empty); an
    InputError naming the input otherwise."""
    values = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            value = float(item)
        except ValueError:
            raise InputError(name, f"must be comma-separated numbers; got {item!r}", text) from None
        if not math.isfinite(value):
            raise InputError(name, f"must hold finite numbers; got {item!r}", text)
        values.append(value)
    if len(values) > limit:
        raise InputError(name, f"takes at most {limit} numbers; got {len(values)}", text)
    return tuple(values)


def _number(value: float) -> str:
    """A bound as the text shows it: 1, 0.5, 100,000, 1e+15."""
    if not float(value).is_integer() or abs(value) >= 1e12:
        return f"{value:g}"
    return f"{int(value):,}" if abs(value) >= 10_000 else str(int(value))


@dataclass(frozen=True)
class Input:
    """One input of the product, as the API, the pages and the command line take it."""

    name: str
    label: str  # on screen
    kind: type[float] | type[int] | type[str]
    default: Scalar | None  # None: not given (the request says what that means)
    help: str  # what it is, without its bounds (they are added from low, high, choices and max_length)
    low: float | None = None
    high: float | None = None
    above: bool = False  # low itself is refused
    # the least value that makes sense, stated as the bound; the endpoint checks it and says why (low is the type's)
    rule_low: float | None = None
    # a page slider's span (low, high) where it is narrower than the bounds: a slider shows and reads this span
    # (an address outside it is brought within, with a note), while the API, the command line and a page's number
    # box take low to high
    slider: tuple[float, float] | None = None
    choices: Callable[[], Sequence[str]] | None = None  # read when asked: a registry may grow
    titles: Callable[[str], str] | None = None  # a choice's on-screen title (the choice itself by default)
    # values announced as the input's enum (the API's schema), read when asked; a text box on the page, and a rule
    # of the model checks a value against what it depends on (the engine's own versions) and says why
    known: Callable[[], Sequence[str]] | None = None
    max_length: int | None = None
    min_length: int | None = None  # text: the fewest characters (none: any, the empty text included)
    pattern: str | None = None
    pattern_rule: bool = False  # the pattern is documented; a rule of the model checks it and says why
    required: bool = False
    legacy: tuple[str, ...] = ()  # keys older page addresses used for the same value

    def __post_init__(self) -> None:
        if self.slider is not None:
            low, high = self.slider
            if self.low is None or self.high is None or not self.low <= low < high <= self.high:
                raise ValueError(f"{self.name}: the slider's span {low:g} to {high:g} is not within {self.span}")

    @property
    def option(self) -> str:
        """The command line's option: --k-max for k_max."""
        return "--" + self.name.replace("_", "-")

    @property
    def span(self) -> str:
        """The bounds in words: "0 to 1", "above 0, at most 1", "one of a, b", "at most 100 characters"."""
        if self.choices is not None:
            return "one of " + ", ".join(self.choices())
        if self.kind is str:
            if self.min_length and self.max_length:
                return f"{self.min_length:,} to {self.max_length:,} characters"
            return f"at most {self.max_length:,} characters" if self.max_length else "any text"
        assert self.low is not None and self.high is not None
        if self.rule_low is not None:
            return f"{_number(self.rule_low)} to {_number(self.high)}"
        if self.above:
            return f"above {_number(self.low)}, at most {_number(self.high)}"
        return f"{_number(self.low)} to {_number(self.high)}"

    @property
    def description(self) -> str:
        """The help with the bounds, as the API documents the parameter and the command line's --help shows it."""
        if self.choices is not None:
            return f"{self.help}. One of: {', '.join(self.choices())}."
        if self.kind is str:
            return f"{self.help}."
        return f"{self.help}, {self.span}."

    def options(self) -> tuple[tuple[str, str], ...]:
        """The choices with their on-screen titles, as they are now."""
        assert self.choices is not None
        return tuple((choice, self.titles(choice) if self.titles else choice) for choice in self.choices())

    def check(self, value: Any) -> Any:
        """The value if this input takes it; otherwise InputError naming the input and its bounds."""
        if value is None:
            if self.required:
                raise InputError(self.name, "is required", value)
            return value
        if self.choices is not None and value not in self.choices():
            raise InputError(self.name, f"must be {self.span}; got {value!r}", value)
        if self.kind is str:
            if self.known is not None and not value.strip():  # the enum has no blank: leave it out for the default
                known = ", ".join(self.known())
                raise InputError(self.name, f"must be one of {known} (left out: the default); got {value!r}", value)
            if (self.max_length is not None and len(value) > self.max_length) or len(value) < (self.min_length or 0):
                raise InputError(self.name, f"must be {self.span}; got {len(value)} characters", value)
            if self.pattern and not self.pattern_rule and not re.fullmatch(self.pattern, value):
                raise InputError(self.name, f"must match {self.pattern}; got {value[:60]!r}", value)
            return value
        if self.low is not None and self.high is not None:
            low_ok = value > self.low if self.above else value >= self.low
            if not (low_ok and value <= self.high):  # also refuses nan
                raise InputError(self.name, f"must be from {self.span}; got {value}", value)
        return value


def by_name(inputs: Sequence[Input]) -> dict[str, Input]:
    return {item.name: item for item in inputs}


def checked(inputs: Sequence[Input], values: Mapping[str, Any]) -> dict[str, Any]:
    """Each input's value (its default where none is given), checked against its own bounds."""
    return {item.name: item.check(values.get(item.name, item.default)) for item in inputs}


def same_named(record: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """The values named after a field of the dataclass ``record``, to build it from the inputs of those names."""
    return {item.name: values[item.name] for item in fields(record) if item.name in values}


def address_value(value: Scalar | None) -> str:
    """A value as a link writes it: text as it is (encoded by query_text), an integer in digits, a float in the
    shortest form that reads back as the same float (repr); None as empty."""
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def query_text(params: Mapping[str, Scalar | None] | Iterable[tuple[str, Scalar | None]]) -> str:
    """The query of a link, name=value pairs in order, each value written by address_value and percent-encoded:
    the one way every link of the product writes its parameters, so that a value with & = + # or spaces reads
    back as it was given."""
    items = params.items() if isinstance(params, Mapping) else params
    return urlencode([(name, address_value(value)) for name, value in items], safe=ADDRESS_SAFE, quote_via=quote)


def link(path: str, params: Mapping[str, Scalar | None] | Iterable[tuple[str, Scalar | None]] = ()) -> str:
    """An address: the path, and its query (query_text) where it has one."""
    query = query_text(params)
    return f"{path}?{query}" if query else path
