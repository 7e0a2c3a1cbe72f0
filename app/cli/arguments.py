"""Argument types shared by the command line's modules: a number within its bounds, or an argparse error; and
the options generated from the inputs declared in app.service (one declaration for the API, pages and CLI)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from app.service.inputs import Input, InputError, by_name


def bounded(kind: type[float] | type[int], low: float, high: float) -> Callable[[str], float | int]:
    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if not low <= value <= high:  # also rejects nan
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g}; got {text}")
        return value

    return parse


def add_repeated(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, flag: str, metavar: str, help: str, **command: Any
) -> None:
    """An option given once per value (--override a --override b): its values in order, none by default."""
    parser.add_argument(flag, action="append", default=[], metavar=metavar, help=help, **command)


def _typed(item: Input) -> Callable[[str], Any]:
    """An option's type: the text as the input's kind, checked against the input's bounds."""

    def parse(text: str) -> Any:
        try:
            value = item.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if item.kind is int else 'a number'}"
            ) from None
        try:
            return item.check(value)
        except InputError as error:
            raise argparse.ArgumentTypeError(error.message) from None

    return parse


def read_as(item: Input, read: Callable[[str], Any]) -> Callable[[str], Any]:
    """An option's type: the text checked as ``item`` (its length, its pattern), then ``read`` into its value,
    when the command line is read; a ValueError of ``read`` is the option's error."""
    checked = _typed(item)

    def parse(text: str) -> Any:
        try:
            return read(checked(text))
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(getattr(error, "message", error))) from None

    return parse


def assignment(inputs: Sequence[Input], what: str) -> Callable[[str], tuple[str, Any]]:
    """An option's type for FIELD=VALUE, FIELD one of ``inputs`` by name: (FIELD, the value as that input's kind,
    within its bounds), read when the command line is, before anything is built."""
    known = by_name(inputs)

    def parse(text: str) -> tuple[str, Any]:
        name, equals, raw = text.partition("=")
        if not equals:
            raise argparse.ArgumentTypeError(f"{text!r}: expected FIELD=VALUE")
        if name not in known:
            raise argparse.ArgumentTypeError(f"{name}: is not a {what}; one of {', '.join(known)}")
        try:
            return name, _typed(known[name])(raw)
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"{name}: {error}") from None

    return parse


def add_input(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, item: Input, flag: str | None = None, **command: Any
) -> None:
    """The input's option, --k-max for k_max (or ``flag``, where a command takes it twice): its help, default,
    bounds and choices (as registered now); ``command`` sets what differs in one command (its own default)."""
    options: dict[str, Any] = {"default": item.default, "help": item.description.replace("%", "%%")}
    if item.choices is not None:
        options["choices"] = list(item.choices())
    else:
        options["type"] = _typed(item)
    if item.required:
        options["required"] = True
    parser.add_argument(flag or item.option, **{**options, **command})


def add_inputs(parser: argparse.ArgumentParser | argparse._ArgumentGroup, inputs: Sequence[Input]) -> None:
    """One option per input (add_input)."""
    for item in inputs:
        add_input(parser, item)


def input_values(arguments: argparse.Namespace, inputs: Sequence[Input]) -> dict[str, Any]:
    """The values of the inputs' options, by input name."""
    return {item.name: getattr(arguments, item.name) for item in inputs}
