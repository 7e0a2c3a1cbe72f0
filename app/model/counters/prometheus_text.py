"""The one reader and the one writer of Prometheus text expositions: every engine's /metrics is read through
prometheus_client's parser here, and a scrape that does not parse is refused naming the line and quoting it whole;
every exposition the product writes (a counter delta, an example report) is written by :func:`exposition`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

MAX_QUOTED = 200  # characters of a refused line quoted in the message


class ExpositionError(ValueError):
    """Text that is not a Prometheus exposition: the first line that does not parse, and why."""

    def __init__(self, line_number: int | None, line: str, reason: str) -> None:
        self.line_number, self.line, self.reason = line_number, line, reason
        quoted = line if len(line) <= MAX_QUOTED else line[: MAX_QUOTED - 1] + "…"
        where = f"line {line_number} does not parse" if line_number is not None else "it does not parse"
        super().__init__(f"{where} ({reason}): «{quoted}»" if line else f"{where} ({reason})")


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


Labels = tuple[tuple[str, str], ...]  # (name, value) in the order written


@dataclass(frozen=True)
class Family:
    """One metric of an exposition: its name, type, help text (none: no HELP line) and samples."""

    name: str
    kind: str  # "counter" or "gauge"
    samples: tuple[tuple[Labels, float], ...]
    help: str | None = None


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def exposition(families: Iterable[Family]) -> str:
    """The families as Prometheus text: HELP and TYPE, then one line per sample (an int written as one)."""
    lines: list[str] = []
    for family in families:
        if family.help is not None:
            lines.append(f"# HELP {family.name} {family.help}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for labels, value in family.samples:
            written = ",".join(f'{name}="{text}"' for name, text in labels)
            lines.append(
                f"{family.name}{{{written}}} {_number(value)}" if labels else f"{family.name} {_number(value)}"
            )
    return "\n".join(lines) + "\n"


_PARSER_ERRORS = (ValueError, TypeError, KeyError, IndexError)


def _reason(error: Exception) -> str:
    text = " ".join(str(error).split())
    # the parser repeats the line in its message: say only what it found wrong
    return text.split(":", 1)[0] if ":" in text else (text or type(error).__name__)


def _first_bad_line(text: str) -> tuple[int | None, str, str]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            for family in text_string_to_metric_families(line + "\n"):
                for _ in family.samples:
                    pass
        except _PARSER_ERRORS as error:
            return number, line.strip(), _reason(error)
    return None, "", "the parser stopped"


def samples(text: str) -> Iterator[Sample]:
    """Every sample of the exposition, in order; an ExpositionError naming the first line that does not parse."""
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                yield Sample(sample.name, dict(sample.labels), float(sample.value))
    except _PARSER_ERRORS as error:
        number, line, reason = _first_bad_line(text)
        raise ExpositionError(number, line, reason if number is not None else _reason(error)) from error
