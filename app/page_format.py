"""Numbers written the way the page's JavaScript writes them, so a server-rendered first paint matches.

Python's ``%.2f`` rounds exact binary ties to even (1.125 -> "1.12"); JavaScript's
``toFixed`` rounds them away from zero ("1.13").  The page renders numbers on the
server first and then updates them in the browser, so both must agree.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal


def js_string(value: float) -> str:
    """A number as JavaScript's String(number) writes it (shortest round trip; exponent below 1e-6 or from 1e21)."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    text = repr(value)
    if value.is_integer() and abs(value) < 1e21:
        return str(int(Decimal(text)))  # the shortest digits, padded with zeros
    if 1e-6 <= abs(value) < 1e21:
        return format(Decimal(text), "f") if "e" in text else text
    mantissa, exponent = text.split("e")  # repr writes an exponent below 1e-4 and from 1e16
    power = int(exponent)
    return f"{mantissa}e{'+' if power >= 0 else '-'}{abs(power)}"


def js_fixed(value: float, digits: int) -> str:
    """Number.prototype.toFixed: the exact binary value rounded to `digits` decimals, ties away from zero."""
    if not math.isfinite(value) or abs(value) >= 1e21:
        return js_string(value)
    return format(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP), "f")
