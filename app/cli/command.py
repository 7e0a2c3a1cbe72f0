"""A command of `specdec-lab` as one declaration: its name, its options, the service call that answers it and the
terminal rendering of that answer.  One executor reads the options, calls the service, maps a refusal to an
exit 2 naming what was refused, and writes the answer as the API's JSON, as CSV or as text."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from app.model.counters.calibration import CalibrationError
from app.model.limits import InputError
from app.service.regimes import SetupError


class Refused(Exception):
    """A command's refusal, in the words written after ``error:``."""


# What a command's answer raises for input it refuses (exit 2); anything else is a fault and shows its traceback.
REFUSALS: tuple[type[Exception], ...] = (Refused, SetupError, InputError, OSError, ValueError)


Answer = TypeVar("Answer", bound=BaseModel)


@dataclass(frozen=True)
class Command(Generic[Answer]):
    """``answer`` reads the parsed options and returns the service's report (a pydantic model); ``text`` renders it
    for a terminal; ``csv``, where given, as CSV.  --format offers json and text, and csv where there is one."""

    name: str
    help: str
    options: Callable[[argparse.ArgumentParser], None]
    answer: Callable[[argparse.Namespace], Answer]
    text: Callable[[argparse.Namespace, Answer], str]
    csv: Callable[[Answer], str] | None = None
    format_help: str = "output format"
    refusals: tuple[type[Exception], ...] = REFUSALS  # none where the options' own bounds are the only refusal


def refusal(error: Exception) -> str:
    """What a refusal says: an input or a rules parameter by its option, a file by its name, others in their words."""
    if isinstance(error, InputError):
        return f"--{error.name.replace('_', '-')}: {error.message}"
    if isinstance(error, CalibrationError) and error.field == "k":  # the k given, which the counts contradict
        return f"--k: {error.message}"
    if isinstance(error, OSError) and error.strerror:
        return f"cannot read {error.filename or 'the input'}: {error.strerror}"
    return str(error)


def fail(name: str, message: str) -> int:
    """A refusal on stderr, as every command writes it; the exit code 2."""
    print(f"specdec-lab {name}: error: {message}", file=sys.stderr)
    return 2


def execute(command: Command[Answer], arguments: argparse.Namespace) -> int:
    try:
        report = command.answer(arguments)
    except command.refusals as error:
        return fail(command.name, refusal(error))
    if arguments.format == "json":
        written = report.model_dump_json(indent=2)
    elif arguments.format == "csv" and command.csv is not None:
        written = command.csv(report)
    else:
        written = command.text(arguments, report)
    sys.stdout.write(written if written.endswith("\n") else written + "\n")
    return 0


def use_color(arguments: argparse.Namespace) -> bool:
    """--color always or never as given; auto: on a terminal, unless NO_COLOR is set."""
    if arguments.color != "auto":
        return bool(arguments.color == "always")
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    command: Command[Answer],
    formatter: type[argparse.HelpFormatter],
) -> None:
    parser = subparsers.add_parser(command.name, help=command.help, description=command.help, formatter_class=formatter)
    command.options(parser)
    formats = ["text", "csv", "json"] if command.csv is not None else ["text", "json"]
    parser.add_argument("--format", choices=formats, default="text", help=command.format_help)
    parser.set_defaults(handler=lambda arguments: execute(command, arguments))
