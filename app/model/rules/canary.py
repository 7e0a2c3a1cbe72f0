"""The canary's rules: per class, the speedup of the replicas that run speculation (canary) over those that do
not (control), recorded from the engine's own decode-time series (its adapter's ``DECODE_TIME``, the series
``specdec-lab rollout check`` reads), and an alert when the canary decodes slower than control for ``hold``,
whose summary says to roll back that class.

They are added to the rules file the plan writes with the config (:func:`app.model.rules.file.build`), so that
the canary is judged on the engine version and the class label the config and the other rules are for.
"""

from __future__ import annotations

from app.model.engines.base import DecodeTime
from app.model.rules.alerts import Alert, Field, Template

CANARY_SPEEDUP = "specdec:canary_speedup"
CANARY_SLOWER = "SpeculativeCanarySlowerThanControl"


def _both(match: str, side: str) -> str:
    return ",".join(part for part in (side, match) if part)


def per_token(series: DecodeTime, label: str, match: str, window: str) -> str:
    """Seconds per decoded token over the window, per class, on the replicas ``match`` selects (none where no
    token was decoded)."""
    by = "" if label == "instance" else label
    seconds = f"sum by ({by}) (increase({series.seconds}{{{match}}}[{window}]))"
    tokens = f"sum by ({by}) (increase({series.tokens}{{{match}}}[{window}]))"
    if series.first_tokens:
        tokens = f"({tokens} - sum by ({by}) (increase({series.first_tokens}{{{match}}}[{window}])))"
    return f"({seconds} / ({tokens} > 0))"


def records(series: DecodeTime, label: str, window: str, match: str, canary: str, control: str) -> dict[str, str]:
    """Record name -> expression: control's per-token decode time over the canary's, per class."""
    return {
        CANARY_SPEEDUP: f"{per_token(series, label, _both(match, control), window)}\n  / "
        f"{per_token(series, label, _both(match, canary), window)}"
    }


def alert(series: DecodeTime, label: str, window: str, hold: str, canary: str, control: str) -> Alert:
    """The canary decoding slower than control for ``hold``: roll that class back."""
    where: list[str | Field] = [] if label == "instance" else [f" for {label}=", Field("label", label)]
    return Alert(
        CANARY_SLOWER,
        f"{CANARY_SPEEDUP} < 1",
        Template(
            (
                "Roll back speculation",
                *where,
                ": its canary replicas decode slower than control (",
                Field("ratio"),
                "x)",
            )
        ),
        Template(
            (
                f"For {hold} the canary replicas ({canary}) have decoded each token more slowly than the control "
                f"replicas ({control}) over {window}: control's seconds per token over the canary's "
                f"({CANARY_SPEEDUP}, from {series.seconds} over {series.tokens}) is ",
                Field("ratio"),
                ". Turn speculation off on the canary for this class (specdec-lab rollout check --canary "
                f"'{canary}' --control '{control}' says by how much, with its interval).",
            )
        ),
        "control's per-token decode time over the canary's",
    )
