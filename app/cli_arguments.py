"""Argument types shared by the command line's modules: a number within its bounds, or an argparse error."""

from __future__ import annotations

import argparse
from collections.abc import Callable


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
