"""Numbers, and the cells of a table's row, as the pages write them.

``fixed`` rounds the exact binary value half away from zero, as JavaScript's ``toFixed`` does, so
that the demo's readouts read the same whether the server wrote them or the closed form's ES
module did while a slider was dragged.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any


def fixed(value: float, digits: int) -> str:
    """value.toFixed(digits) for finite values below 1e21."""
    if not math.isfinite(value):
        return "∞" if value > 0 else "−∞" if value < 0 else "NaN"
    if value == 0:
        value = 0.0  # no sign on zero
    with localcontext() as context:
        context.prec = 400
        return f"{Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP):f}"


def times(value: float) -> str:
    """A speedup: two decimals and a multiplication sign."""
    return f"{fixed(value, 2)}×"


def cells(*texts: str, header: bool = False) -> dict[str, Any]:
    """A table row's cells, the first one the row's header where ``header``."""
    row: list[dict[str, Any]] = [{"text": text} for text in texts]
    if header:
        row[0]["header"] = True
    return {"cells": row}
