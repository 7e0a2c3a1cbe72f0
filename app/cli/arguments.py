"""Argument types shared by the command line's modules: a number within its bounds, or an argparse error; and
the options generated from the inputs declared in app.service (one declaration for the API, pages and CLI)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app.cli.command import Refused
from app.model.limits import InputError
from app.service import setup_inputs
from app.service.fetch import MAX_FETCH_BYTES, fetch_text
from app.service.inputs import Input, by_name
from app.service.regimes import BuiltSetup, SetupRequest, build_setup
from app.service.step_fit import StepFitError, fitted_setup


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
        if not text.strip():
            return None  # given empty: as if not given
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
        item = known[name]
        try:
            if item.kind is int and raw.strip().replace(".", "", 1).isdigit() and float(raw).is_integer():
                raw = str(int(float(raw)))  # 40.0 for an integer field, as the API's JSON may write it
            return name, _typed(item)(raw)
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


# ---------------------------------------------------------------------------
# The setup every roofline command prices, and --step-fit's measured terms


def add_setup_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("roofline: presets, formats and serving conditions")
    add_inputs(group, setup_inputs.SERVING)
    add_repeated(
        group,
        "--set",
        "FIELD=VALUE",
        "override one preset field, as in the API: hw_bandwidth_tb_s=4, model_layers=40, draft_total_params_b=3",
        dest="overrides",
        type=assignment(setup_inputs.OVERRIDES, "preset field"),
    )


def add_color(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto", help="colour in text output")


def add_roofline_arguments(parser: argparse.ArgumentParser) -> None:
    """The setup, --format (text, csv or json) and --color, for the commands that write their own output."""
    add_setup_arguments(parser)
    parser.add_argument("--format", choices=["text", "csv", "json"], default="text", help="output format")
    add_color(parser)


def setup_request(arguments: argparse.Namespace) -> SetupRequest:
    """The setup of the options and of each --set (read and bounded by the preset fields' declarations)."""
    return setup_inputs.request({**input_values(arguments, setup_inputs.SERVING), **dict(arguments.overrides)})


def read_source(source: str) -> str:
    """A report from a file, '-' (stdin) or an http(s) URL fetched from this machine (timeout and size cap)."""

    if source.startswith(("http://", "https://")):
        return fetch_text(source)
    if source == "-":
        return sys.stdin.read(MAX_FETCH_BYTES + 1)
    path = Path(source)
    if path.stat().st_size > MAX_FETCH_BYTES:
        raise ValueError(f"{source} is larger than {MAX_FETCH_BYTES:,} bytes")
    return path.read_text(encoding="utf-8")


def add_step_fit_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--step-fit",
        metavar="FILE",
        help="measured step times (the step-fit input measure --batch writes, CSV of batch, tokens, ms, or an "
        "engine's step statistics; - for stdin): the efficiencies and overheads are fitted to them on this setup "
        "and used in place of the defaults, and the answer says measured, with the fit's out-of-sample error",
    )


def step_fitted(arguments: argparse.Namespace, built: BuiltSetup) -> BuiltSetup:
    """The setup with the terms fitted to --step-fit's measured steps (as given without it); Refused with the
    reason where they cannot be read or fitted."""
    if not getattr(arguments, "step_fit", None):
        return built
    try:
        return fitted_setup(read_source(arguments.step_fit), built)[1]
    except OSError as error:
        raise Refused(f"--step-fit: {error.strerror}: {arguments.step_fit}") from None
    except StepFitError as error:
        raise Refused(f"--step-fit {arguments.step_fit}: {error}") from None
    except ValueError as error:  # larger than the cap, or a URL that could not be read
        raise Refused(f"--step-fit: {error}") from None


def built_setup(arguments: argparse.Namespace) -> BuiltSetup:
    """The setup of the options, with --step-fit's terms where given; SetupError or Refused where it cannot be."""
    return step_fitted(arguments, build_setup(setup_request(arguments)))
