"""Responses of the rules endpoints: a Prometheus rules file for a setup and schedule, and what it holds."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.model import engines, rules
from app.service.schemas.fill import filled
from app.service.schemas.regimes import AccuracyOut


class AlertOut(BaseModel):
    name: str
    expr: str
    value: str = Field(description="What the alert's value is: the k its summary tells to run (0 = speculation off).")


class RulesOut(BaseModel):
    engine: str = Field(description=f"One of {', '.join(engines.ENGINES)}.")
    engine_version: str
    engine_versions: list[str] = Field(description="The versions of this engine that specdec-lab knows.")
    sources: list[str] = Field(description="Engine source files (repository: path @ commit) that define the series.")
    label: str = Field(description="The label whose values are the classes (with instance).")
    window: str = Field(description="The rate window of the recording rules.")
    hold: str = Field(description="How long a condition holds before its alert fires (the rules' for:).")
    p: float = Field(description="The acceptance the schedule was decided for.")
    p_low: float = Field(description="The calibrated lower bound of p the acceptance alert holds the server to.")
    batch_limit: int = Field(description="The last batch decided: min(batch_max, the largest batch that fits).")
    schedule_k_by_batch: list[int] = Field(
        description="The best k the plan decided at batch 1..batch_limit; the rules hold the server to the k its "
        "config runs there (engine_k_by_batch, recorded as specdec:schedule_k)."
    )
    engine_k_by_batch: list[int] = Field(description="The k the engine's config runs at batch 1..batch_limit.")
    headline: str
    records: list[str] = Field(description="The recording rules, in the order Prometheus evaluates them.")
    alerts: list[AlertOut]
    series: list[str] = Field(description="The engine's own series the rules read.")
    unchecked: list[str] = Field(description="What these rules cannot check on this engine version, and why.")
    notes: list[str]
    groups: list[dict[str, Any]] = Field(description="The rules file as data (what `yaml` holds).")
    yaml: str = Field(description="The rules file for Prometheus's rule_files, written with a YAML library.")
    accuracy: AccuracyOut | None = Field(
        default=None,
        description="Where the schedule the rules hold the server to comes from, how far off (also a comment in yaml).",
    )


def rules_out(made: rules.RulesFile, accuracy: AccuracyOut | None = None) -> RulesOut:
    """The rules file and what it holds, as the API and `specdec-lab rules --format json` answer."""
    metrics = made.metrics
    series = [
        name
        for name in (
            metrics.running,
            metrics.drafts,
            metrics.draft_tokens,
            metrics.accepted,
            metrics.per_position,
            metrics.drafted_per_position,
            metrics.verify_calls,
            metrics.generated,
            metrics.accept_length,
            metrics.running_k,
        )
        if name
    ]
    return filled(
        RulesOut,
        made,
        engine_version=made.version.name,
        engine_versions=[version.name for version in engines.versions(made.engine)],
        sources=made.version.cite(),
        batch_limit=made.decision.batch_limit,
        schedule_k_by_batch=made.decision.best_k,
        engine_k_by_batch=list(made.engine_k),
        headline=made.decision.headline,
        records=list(made.records),
        alerts=[AlertOut(name=alert.name, expr=alert.expr, value=alert.meaning) for alert in made.alerts],
        series=series,
        unchecked=list(made.unchecked),
        notes=list(made.notes),
        groups=made.document["groups"],
        yaml=made.text,
        accuracy=accuracy,
    )
