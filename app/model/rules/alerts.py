"""What the alerts say: when each fires, and what it tells an operator to do.

Three alerts: speculation not paying (speedup below 1 for ``hold``), acceptance below its calibrated interval,
and a draft length off the schedule at the running batch.  Each alert's value is a k, and its summary says what
to do with it: run that k, or turn speculation off.  Annotations are templates with a Python twin
(:meth:`Template.render`), so that a test can say what an alert will read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.model.rules.promql import (
    ACCEPTANCE,
    ACCEPTANCE_UPPER,
    BREAK_EVEN,
    DRAFTS,
    RECOMMENDED_K,
    RUNNING_K,
    SCHEDULE_K,
    SPEEDUP,
    TOKENS,
    Series,
    number,
)

MIN_DRAFTS = 20  # drafts in the window before an alert on counts may fire
SEVERITY = "warning"

NOT_PAYING = "SpeculativeDecodingNotPaying"
ACCEPTANCE_LOW = "SpeculativeAcceptanceBelowCalibrated"
OFF_SCHEDULE = "SpeculativeDraftLengthOffSchedule"

# How the k the engine runs shows, in words, for the off-schedule alert's description
_K_SEEN = {
    "positions": "the number of per-position series (the one k the server runs)",
    "mean-draft-length": "the mean draft length (drafted / drafts; at most the k run, so only a server drafting "
    "longer than the schedule is seen)",
    "longest-draft": "the longest draft in the window (only a server drafting longer than the schedule is seen)",
}


@dataclass(frozen=True)
class Field:
    """A place in an annotation filled at alert time: a label's value, or the alert's value (a k)."""

    kind: str  # 'label', 'k', 'action', 'ratio' (the alert's value as a ratio, two decimals)
    name: str = ""


@dataclass(frozen=True)
class Template:
    parts: tuple[str | Field, ...]

    def filled(self, label: Callable[[str], str], k: str, ratio: str, action: Callable[[str, str], str]) -> str:
        """The parts in order, each field written as given: a label by its name, the value as a k and as a
        ratio, an action by its two branches (off: speculation off; on: the text before the k)."""
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            elif part.kind == "label":
                out.append(label(part.name))
            elif part.kind == "k":
                out.append(k)
            elif part.kind == "ratio":
                out.append(ratio)
            else:
                off, on = part.name.split("|")
                out.append(action(off, on))
        return "".join(out)

    def go(self) -> str:
        """As Prometheus's Go template."""
        return self.filled(
            lambda name: f'{{{{ index $labels "{name}" }}}}',
            '{{ printf "%.0f" $value }}',
            '{{ printf "%.2f" $value }}',
            lambda off, on: (
                f'{{{{ if eq $value 0.0 }}}}{off}{{{{ else }}}}{on}{{{{ printf "%.0f" $value }}}}{{{{ end }}}}'
            ),
        )

    def described(self, labels: dict[str, str]) -> str:
        """The text for any value of the alert: the k as "k", an action as both its branches."""
        return self.filled(lambda name: labels.get(name, name), "k", "the ratio", lambda off, on: f"{on}k (or {off})")

    def render(self, labels: dict[str, str], value: float) -> str:
        """What Prometheus writes for these labels and this value."""
        return self.filled(
            lambda name: labels.get(name, ""),
            f"{value:.0f}",
            f"{value:.2f}",
            lambda off, on: off if value == 0.0 else f"{on}{value:.0f}",
        )


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    summary: Template
    description: Template
    meaning: str  # what the alert's value is


def build(series: Series, title: str, how_to_apply: str, hold: str, p_low: float) -> tuple[list[Alert], list[str]]:
    """The alerts on these series, and what they cannot check on this engine version."""
    m, window, label = series.metrics, series.window, series.label
    unchecked: list[str] = []
    enough = f" and ({DRAFTS} >= {MIN_DRAFTS})" if series.counted else ""
    where: list[str | Field] = [Field("label", "instance"), f" ({label}=", Field("label", label), ")"]
    found = [
        Alert(
            NOT_PAYING,
            f"{RECOMMENDED_K} and ({SPEEDUP} < 1){enough}",
            Template(("Speculative decoding is not paying on ", *where, ": ", Field("action", "turn it off|run k = "))),
            Template(
                (
                    f"For {hold} the tokens per verification over {window} ({TOKENS}) have stayed below the "
                    f"break-even k c + v(k) of this setup at the running batch ({BREAK_EVEN}): each cycle costs "
                    "more target passes than the tokens it yields, so the server is slower than without "
                    "speculation. At the acceptance measured now and the running batch the best draft length on "
                    "this setup is k = ",
                    Field("k"),
                    " (0: no k pays, turn speculation off)",
                    ". Look at the acceptance and the batch on the dashboard for why.",
                )
            ),
            "the best k at the measured p and running batch",
        )
    ]
    if series.positional:
        low_expr = f"({ACCEPTANCE_UPPER} < {number(p_low)})"
        how = f"its 99.9% upper bound ({ACCEPTANCE_UPPER})"
    else:
        low_expr = f"({ACCEPTANCE} < {number(p_low)})"
        how = f"the i.i.d. p that gives the tokens per verification ({ACCEPTANCE})"
    found.append(
        Alert(
            ACCEPTANCE_LOW,
            f"{RECOMMENDED_K} and {low_expr}{enough}",
            Template(
                (
                    "Acceptance on ",
                    *where,
                    f" is below its calibrated interval (p < {number(p_low)}): ",
                    Field("action", "turn speculation off|run k = "),
                )
            ),
            Template(
                (
                    f"For {hold} the acceptance over {window}, {how}, has stayed below the calibrated lower "
                    f"bound {number(p_low)}: the drafts agree with the target less than when the rules were "
                    "made (did the workload, the draft model or the engine version change?). At the acceptance "
                    "measured now and the running batch the best k on this setup is ",
                    Field("k"),
                    " (0: speculation off). Recalibrate with specdec-lab calibrate --from the server's /metrics "
                    "and write these rules again.",
                )
            ),
            "the best k at the measured p and running batch",
        )
    )
    if m.k_from in ("gauge", "positions"):
        off_expr = f"{SCHEDULE_K} and (abs({SCHEDULE_K} - {RUNNING_K}) >= 0.5)"
    elif m.k_from in ("mean-draft-length", "longest-draft"):
        off_expr = f"{SCHEDULE_K} and ({RUNNING_K} - {SCHEDULE_K} >= 0.5)"
    else:
        unchecked.append(
            f"{OFF_SCHEDULE}: {title} exports no gauge or counter of the draft length it runs, so a draft "
            "length off the schedule cannot be checked"
        )
        return found, unchecked
    seen = f"{m.running_k} (the k running at each scrape)" if m.k_from == "gauge" else _K_SEEN[m.k_from]
    found.append(
        Alert(
            OFF_SCHEDULE,
            off_expr,
            Template(
                (
                    "The draft length on ",
                    *where,
                    " is not the schedule's at the running batch: ",
                    Field("action", "turn speculation off at this batch|set k = "),
                )
            ),
            Template(
                (
                    f"For {hold} the draft length the server runs, read from {seen} ({RUNNING_K}), has "
                    f"differed from the schedule's k at the running batch ({SCHEDULE_K} = ",
                    Field("k"),
                    f"). To follow the schedule, {how_to_apply}.",
                )
            ),
            "the schedule's k at the running batch",
        )
    )
    return found, unchecked
