"""A page's controls: labels, defaults and bounds written once, read from a URL two ways.

The HTML page reads its address leniently: a value out of range is clamped and a malformed one
falls back to the default, each with a note that says so on the page.  The page's JSON twin reads
the same controls strictly: anything the page would have to correct is a 422 that names the
control by its on-screen label and states its bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, overload

Kind = Literal["range", "number", "select", "text"]
Value = float | int | str


class ControlError(ValueError):
    """A control's value that the strict reading refuses; the message names the on-screen label."""

    def __init__(self, control: Control, message: str) -> None:
        super().__init__(message)
        self.control = control
        self.message = message


class Options(Sequence[tuple[str, str]]):
    """A select's (value, title) pairs read from a registry each time they are asked for, so that a choice
    registered after the page was declared (an engine) is offered and taken."""

    def __init__(self, read: Callable[[], tuple[tuple[str, str], ...]]) -> None:
        self._read = read

    @overload
    def __getitem__(self, index: int) -> tuple[str, str]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[str, str]]: ...
    def __getitem__(self, index: int | slice) -> tuple[str, str] | Sequence[tuple[str, str]]:
        return self._read()[index]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def _shown(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


@dataclass(frozen=True)
class Control:
    """One input of a page: the URL key, the on-screen label, its default and its bounds."""

    name: str
    label: str
    kind: Kind
    default: Value | None  # None: no value of its own until the address gives one (the view fills it in)
    low: float | None = None
    high: float | None = None
    step: float | None = None
    integer: bool = False
    options: Sequence[tuple[str, str]] = ()
    max_length: int = 0
    known: Callable[[], Sequence[str]] | None = None  # a text's known values, announced (a rule of the view checks)
    help: str = ""
    digits: int = 2  # decimals a range control's value is shown with
    legacy: tuple[str, ...] = ()  # keys older URLs used for the same value

    @property
    def default_text(self) -> str:
        """The default as the address (and the input's value) writes it: the driver leaves it out of the URL."""
        return url_text(self.default)

    @property
    def bounds(self) -> str:
        if self.kind == "select":
            return "one of " + ", ".join(value for value, _ in self.options)
        if self.kind == "text":
            return f"text of at most {self.max_length} characters"
        kind = "an integer" if self.integer else "a number"
        return f"{kind} from {_shown(self.low or 0.0)} to {_shown(self.high or 0.0)}"

    def shown(self, value: Value | None) -> str:
        """The value as the control's readout shows it."""
        if value is None:
            return ""
        if self.kind in ("select", "text"):
            return str(value)
        if self.integer:
            return str(int(value))
        return f"{float(value):.{self.digits}f}" if self.kind == "range" else _shown(float(value))

    def from_legacy(self, value: str) -> str | None:
        """This control's value in an older address's key, as its own key carries it (None: nothing for it)."""
        return value

    def read(self, raw: str | None, strict: bool) -> tuple[Value | None, str | None]:
        """(value, note): the value for this raw URL text and, when it had to be corrected, why."""
        if raw is None or raw == "" or (not raw.strip() and (self.kind == "text" or not strict)):
            # blank: the default; whitespace alone is blank text, and read strictly a number or choice it is not
            return self.default, None
        if self.kind == "select":
            if raw in {value for value, _ in self.options}:
                return raw, None
            return self._refuse(strict, f"{self.label} must be {self.bounds}; got {raw!r}")
        if self.kind == "text":
            if len(raw) <= self.max_length:
                return raw, None
            return self._refuse(strict, f"{self.label} must be {self.bounds}; got {len(raw)} characters")
        try:
            number = float(raw)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            return self._refuse(strict, f"{self.label} must be {self.bounds}; got {raw!r}")
        assert self.low is not None and self.high is not None
        if self.integer and not number.is_integer() and strict:
            raise ControlError(self, f"{self.label} must be {self.bounds}; got {raw}")
        clamped = min(max(number, self.low), self.high)
        if clamped != number:
            if strict:
                raise ControlError(self, f"{self.label} must be {self.bounds}; got {raw}")
            value = self._snap(clamped)
            return (
                value,
                f"{self.label} {url_text(number)} from the address is out of range; showing {self.shown(value)}.",
            )
        return self._snap(number), None

    def _snap(self, number: float) -> Value:
        if self.integer:
            return round(number)
        if self.kind == "range" and self.step:
            return round(round(number / self.step) * self.step, 10)
        return int(number) if float(number).is_integer() and abs(number) < 2**53 else float(number)  # 70, as written

    def _refuse(self, strict: bool, message: str) -> tuple[Value | None, str | None]:
        if strict:
            raise ControlError(self, message)
        # The address's text is not repeated on the page: it may be anything, markup included.
        showing = "its default" if self.default is None else self.shown(self.default)
        return self.default, f"{self.label} from the address is not {self.bounds}; showing {showing}."


@dataclass(frozen=True)
class Reading:
    """Controls read from a URL: the values and the notes of what was corrected.

    ``strict`` says how the address was read, so that a view checking a rule between controls
    refuses (ControlError) or corrects with a note, as the reading of each control did.
    """

    values: dict[str, Value | None]
    notes: list[str] = field(default_factory=list)
    strict: bool = False
    body: dict[str, str] | None = None  # texts posted with the view (None: asked for with GET)
    given: frozenset[str] = frozenset()  # the controls the address names (the others are at their defaults)

    def correct(self, control: Control, value: Value, message: str) -> None:
        """A rule between controls is broken: the strict reading refuses it, naming the control's label; the
        lenient one shows ``value`` instead, with a note."""
        if self.strict:
            raise ControlError(control, message)
        self.values[control.name] = value
        self.notes.append(f"{message}; showing {control.shown(value)}.")

    def __getitem__(self, name: str) -> Value | None:
        return self.values[name]

    def number(self, name: str) -> float:
        value = self.values[name]
        assert value is not None and not isinstance(value, str)
        return float(value)

    def integer(self, name: str) -> int:
        return int(self.number(name))

    def text(self, name: str) -> str:
        return str(self.values[name])


def read_controls(controls: Sequence[Control], query: Mapping[str, str], strict: bool) -> Reading:
    """Every control's value from the query; strict raises ControlError, lenient corrects and notes."""
    values: dict[str, Value | None] = {}
    notes: list[str] = []
    given: set[str] = set()
    for control in controls:
        raw = query.get(control.name)
        for old in control.legacy:
            if raw is None:
                raw = query.get(old)
        value, note = control.read(raw, strict)
        values[control.name] = value
        if raw is not None and raw.strip():
            given.add(control.name)
        if note:
            notes.append(note)
    return Reading(values, notes, strict, given=frozenset(given))


def changed_from_defaults(controls: Sequence[Control], reading: Reading) -> dict[str, str]:
    """The query a URL needs for this reading: only values that differ from their defaults."""
    query = {}
    for control in controls:
        value = reading.values[control.name]
        if value is not None and value != control.default:
            query[control.name] = url_text(value)
    return query


def url_text(value: Value | None) -> str:
    """A value as the address carries it: integers without a point, floats in their shortest form (so is a whole
    number past 2**53, 1e+308 rather than its 309 digits)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(float(value))
