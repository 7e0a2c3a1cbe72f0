"""Numbers read and written the way the page's JavaScript reads and writes them.

The page renders every section on the server first and then lets its ES modules
take over, so the first paint must match what the scripts would show: URL values
are parsed as ``Number()`` parses them, and numbers are written as ``String()``,
``toFixed`` and ``toExponential`` write them.  Python's ``%.2f`` rounds exact
binary ties to even (1.125 -> "1.12") where ``toFixed`` rounds them away from
zero ("1.13").
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal, localcontext

JS_SPACE = "\t\n\v\f\r \u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_JS_RADIX = {
    prefix: (base, re.compile(digits))
    for prefixes, base, digits in (("0x0X", 16, "[0-9a-fA-F]+"), ("0o0O", 8, "[0-7]+"), ("0b0B", 2, "[01]+"))
    for prefix in (prefixes[:2], prefixes[2:])
}


def js_number(text: str) -> float:
    """Number(text) in JavaScript: NaN for anything that is not a whole numeric literal."""
    text = text.strip(JS_SPACE)
    if not text:
        return 0.0
    if _JS_DECIMAL.fullmatch(text):
        return float(text.replace("Infinity", "inf"))
    radix = _JS_RADIX.get(text[:2])
    if radix is not None and radix[1].fullmatch(text[2:]):
        try:
            return float(int(text[2:], radix[0]))
        except OverflowError:
            return math.inf
    return math.nan


def js_string(value: float) -> str:
    """String(value) for a JavaScript number: shortest round-trip digits, exponent only past 1e21 or below 1e-6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits_tuple, exponent = Decimal(repr(abs(float(value)))).normalize().as_tuple()[1:]
    digits = "".join(map(str, digits_tuple))
    assert isinstance(exponent, int)
    point = exponent + len(digits)  # value = 0.digits x 10^point
    if len(digits) <= point <= 21:
        text = digits + "0" * (point - len(digits))
    elif 0 < point <= 21:
        text = f"{digits[:point]}.{digits[point:]}"
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    else:
        power = point - 1
        mantissa = digits if len(digits) == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{mantissa}e{'+' if power >= 0 else '-'}{abs(power)}"
    return sign + text


def js_fixed(value: float, digits: int) -> str:
    """value.toFixed(digits): the exact binary value rounded half away from zero."""
    if not math.isfinite(value) or abs(value) >= 1e21:
        return js_string(value)
    if value == 0:
        value = 0.0  # (-0).toFixed() has no sign
    with localcontext() as context:
        context.prec = 400
        return f"{Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP):f}"


def js_exponential(value: float, digits: int) -> str:
    """value.toExponential(digits), e.g. 1.2e-5."""
    if not math.isfinite(value):
        return js_string(value)
    if value == 0:
        return f"{0:.{digits}f}e+0"
    with localcontext() as context:
        context.prec = 400
        exact = Decimal(value)
        power = exact.adjusted()
        quantum = Decimal(1).scaleb(-digits)
        mantissa = exact.scaleb(-power).quantize(quantum, rounding=ROUND_HALF_UP)
        if abs(mantissa) >= 10:
            power += 1
            mantissa = exact.scaleb(-power).quantize(quantum, rounding=ROUND_HALF_UP)
    return f"{mantissa:f}e{'+' if power >= 0 else '-'}{abs(power)}"


def js_round(value: float) -> int:
    """Math.round: halves go up."""
    return math.floor(value + 0.5)
