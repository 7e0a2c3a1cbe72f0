"""The toolkit every engine's step-time readers share: one measured row (:class:`StepRow`), its checks, and
the shape of a reader (:class:`StepTimeFormat`).

The readers themselves live in each engine's package (``app/model/engines/<engine>/step_times.py``); the
CSV any tool can write, and the fit, in :mod:`app.model.live.step_fit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_ROWS = 5_000
MAX_BATCH = 4096
MAX_TOKENS = 1024
MAX_DRAFT_STEPS = 64


class StepFitError(ValueError):
    """Step times that cannot be read or fitted, with the reason."""


@dataclass(frozen=True)
class StepRow:
    batch: int
    tokens: float  # verified tokens per sequence of the target pass (a mean over steps may be fractional)
    ms: float
    draft_steps: int = 0
    draft_width: int = 1

    @property
    def kind(self) -> str:
        return "cycle" if self.draft_steps else "target"


def step_row(batch: float, tokens: float, ms: float, where: str, draft_steps: int = 0, width: int = 1) -> StepRow:
    """A row checked against the bounds, or a StepFitError naming ``where`` and the value out of them."""
    for name, value in (("batch", batch), ("tokens", tokens), ("ms", ms)):
        if not math.isfinite(value):
            raise StepFitError(f"{where}: {name} is not a finite number")
    if not (1 <= batch <= MAX_BATCH and float(batch).is_integer()):
        raise StepFitError(f"{where}: batch must be a whole number from 1 to {MAX_BATCH}; got {batch:g}")
    if not 1 <= tokens <= MAX_TOKENS:
        raise StepFitError(f"{where}: tokens must be from 1 to {MAX_TOKENS} (a mean may be fractional); got {tokens:g}")
    if not 0 < ms <= 1e6:
        raise StepFitError(f"{where}: the time must be above 0 and at most 1e6 ms; got {ms:g}")
    if not 0 <= draft_steps <= MAX_DRAFT_STEPS:
        raise StepFitError(
            f"{where}: draft_steps must be a whole number from 0 to {MAX_DRAFT_STEPS}; got {draft_steps}"
        )
    whole = int(tokens) if float(tokens).is_integer() else float(tokens)
    return StepRow(int(batch), whole, float(ms), draft_steps, width)


@dataclass(frozen=True)
class StepTimeFormat:
    """One engine's file of step times: how to recognise its JSON and read it into rows.

    ``fallback`` formats are tried after every other format has declined (a format whose shape is only
    "a list of objects" would otherwise take another engine's list).
    """

    name: str
    engine: str
    description: str
    detect: Callable[[Any], bool]  # the parsed JSON (an object, or a list for JSON Lines) -> is it this format
    read: Callable[[Any], list[StepRow]]
    fallback: bool = False
