"""The rules file: one group of recording rules and alerting rules, written as YAML.

The recording rules (in the order Prometheus evaluates them) record, per instance and class, the running batch,
the schedule's k and the break-even at it, drafts, the counter resets, the mean draft length, the k the engine
runs, tokens per verification, the acceptance per position, p and its upper bound, the implied speedup and the
best k at the measured p; the alerts follow (:mod:`app.model.rules.alerts`).  Every series the file records
carries ``RULES_LABEL``, so that files for several engines or deployments load side by side.  Everything is
data (``document``) written with PyYAML (``text``), under a header of comments that says what the file is for.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml

from app.model import engines
from app.model.cost.capacity import Decision
from app.model.cost.regimes import RooflineSetup
from app.model.engines.base import EngineVersion, Exported, RulesMetrics, describe_batches
from app.model.rules import alerts as alerting
from app.model.rules import canary as canary_rules
from app.model.rules import promql
from app.model.rules.alerts import SEVERITY, Alert
from app.model.rules.promql import RULES_LABEL
from app.model.rules.request import RulesError, RulesRequest, check


@dataclass(frozen=True)
class RulesFile:
    engine: str
    rules_id: str  # the value of RULES_LABEL on every series these rules record
    title: str
    version: EngineVersion
    label: str
    window: str
    hold: str
    match: str
    p: float
    p_low: float
    decision: Decision
    engine_k: tuple[int, ...]  # the k the engine's config runs at batch 1..batch_limit
    metrics: RulesMetrics
    records: tuple[str, ...]
    alerts: tuple[Alert, ...]
    document: dict[str, Any]
    text: str
    setup_text: str
    notes: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()  # what these rules cannot check on this engine version
    cost_pieces: int = 0
    accuracy: str = ""  # where the schedule's numbers come from and how far off to expect them

    def alert(self, name: str) -> Alert:
        return next(alert for alert in self.alerts if alert.name == name)


def setup_text(setup: RooflineSetup) -> str:
    return (
        f"{setup.target.name} verified with {setup.draft.name} drafts on {setup.devices} × {setup.accelerator.name}, "
        f"{setup.context_tokens:,} tokens of context"
    )


def rules_id(engine: str, match: str) -> str:
    """Names the series one rules file records (RULES_LABEL), so that files for several engines, or for one
    engine's deployments told apart by ``match``, can be loaded into one Prometheus side by side."""
    if not match:
        return engine
    return f"{engine}-{hashlib.sha256(match.encode()).hexdigest()[:8]}"


def rules_id_pattern(engine: str) -> str:
    """A regular expression matching every ``rules_id`` of this engine's files, whatever their matchers."""
    return f"{re.escape(engine)}(-[0-9a-f]{{8}})?".replace("\\", "\\\\")  # PromQL strings escape backslashes


def recording_rules(
    series: promql.Series,
    setup: RooflineSetup,
    decision: Decision,
    engine_k: Sequence[int],
    priced: Sequence[int],
    k_max: int,
) -> tuple[dict[str, str], int]:
    """Record name -> expression, in the order Prometheus evaluates them, and the break-even's pieces."""
    measured = series.measured()
    records: dict[str, str] = {promql.RUNNING_BATCH: measured.pop(promql.RUNNING_BATCH)}
    records[promql.SCHEDULE_BATCH] = promql.schedule_batch(len(engine_k))
    # the k the config runs at each batch (the plan's export, read back): a server that follows the config is on
    # schedule at every batch
    records[promql.SCHEDULE_K] = promql.schedule_k(engine_k)
    records[promql.BREAK_EVEN], cost_pieces = promql.break_even(setup, priced)
    records.update(measured)
    if series.positional:
        records[promql.ACCEPTANCE_UPPER] = promql.acceptance_upper()
    else:
        records[promql.ACCEPTANCE] = series.p_from_tokens(priced, k_max, decision.best_k)
    records[promql.SPEEDUP] = promql.speedup()
    records[promql.RECOMMENDED_K] = promql.recommended_k(setup, len(engine_k), k_max)
    return records, cost_pieces


def build(
    request: RulesRequest, setup: RooflineSetup, decision: Decision, exported: Exported, accuracy: str = ""
) -> RulesFile:
    """The rules file for this engine version, setup and decided schedule, priced at the k ``exported`` runs.

    The decision and the config are the plan's (``app.service.plan``): the rules never decide again, so that the
    schedule they alert on is the one the config was written from.  A RulesError names the parameter to blame.
    """
    checked = check(request)
    module = engines.adapter(request.engine)
    version, metrics, label, match, p_low = (
        checked.version,
        checked.metrics,
        checked.label,
        checked.match,
        checked.p_low,
    )
    limit = decision.batch_limit
    if limit < 1:
        raise RulesError("devices", decision.headline)
    notes = [decision.headline]
    engine_k = list(exported.runs) if len(exported.runs) == limit else [0] * limit
    fallback = max(engine_k) or max(decision.best_k) or request.k_max
    if 0 in engine_k:
        off = [batch for batch, k in enumerate(engine_k, start=1) if k == 0]
        notes.append(
            f"the config runs no speculation at batches {describe_batches(off)}; should the server draft there "
            f"anyway, the break-even there is priced at k = {fallback}"
        )
    priced = [k or fallback for k in engine_k]
    series = promql.Series(metrics, label, request.window, match)
    records, cost_pieces = recording_rules(series, setup, decision, engine_k, priced, request.k_max)
    alerts, unchecked = alerting.build(series, module.TITLE, module.HOW_TO_APPLY, request.hold, p_low)
    if checked.canary:
        decode = module.DECODE_TIME
        records.update(canary_rules.records(decode, label, request.window, match, checked.canary, checked.control))
        alerts.append(canary_rules.alert(decode, label, request.window, request.hold, checked.canary, checked.control))
        notes.append(
            f"canary ({checked.canary}) against control ({checked.control}): {canary_rules.CANARY_SPEEDUP} per "
            f"{label} is control's per-token decode time over the canary's ({decode.note})"
        )
    notes += [f"{module.TITLE} {version.name}: {text}" for text in metrics.loses]
    if exported.differs_at:
        notes.append(
            f"with the config written for it, {module.TITLE} {version.name} runs another k than the schedule at "
            f"batches {describe_batches(exported.differs_at)}: the break-even is priced at the k it runs"
        )
    identity = rules_id(request.engine, match)
    alerts = [replace(alert, expr=promql.scoped(alert.expr, identity)) for alert in alerts]
    rules: list[dict[str, Any]] = [
        {"record": name, "expr": promql.scoped(expr, identity), "labels": {RULES_LABEL: identity}}
        for name, expr in records.items()
    ]
    rules += [alerting_rule(alert, request.hold, checked.hold_s) for alert in alerts]
    document = {"groups": [{"name": f"specdec-lab-{identity}", "rules": rules}]}
    text = header(module.TITLE, version, label, request.window, request.hold, setup, decision, notes, unchecked)
    text += f"# how good: {accuracy}\n" if accuracy else ""
    text += dump(document)
    return RulesFile(
        engine=request.engine,
        rules_id=identity,
        title=module.TITLE,
        version=version,
        label=label,
        window=request.window,
        hold=request.hold,
        match=match,
        p=request.p,
        p_low=p_low,
        decision=decision,
        engine_k=tuple(engine_k),
        metrics=metrics,
        records=tuple(records),
        alerts=tuple(alerts),
        document=document,
        text=text,
        setup_text=setup_text(setup),
        notes=tuple(notes),
        unchecked=tuple(unchecked),
        cost_pieces=cost_pieces,
        accuracy=accuracy,
    )


def alerting_rule(alert: Alert, hold: str, hold_s: float) -> dict[str, Any]:
    rule: dict[str, Any] = {"alert": alert.name, "expr": alert.expr}
    if hold_s > 0:
        rule["for"] = hold
    rule["labels"] = {"severity": SEVERITY}
    rule["annotations"] = {"summary": alert.summary.go(), "description": alert.description.go()}
    return rule


# ---------------------------------------------------------------------------
# YAML


class _Dumper(yaml.SafeDumper):  # type: ignore[misc]
    pass


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _string)


def dump(document: dict[str, Any]) -> str:
    text: str = yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=4096, allow_unicode=True)
    return text


def header(
    title: str,
    version: EngineVersion,
    label: str,
    window: str,
    hold: str,
    setup: RooflineSetup,
    decision: Decision,
    notes: Sequence[str],
    unchecked: Sequence[str],
) -> str:
    lines = [
        f"specdec-lab rules for {title} {version.name}: per instance and {label}, window {window}, alerts after {hold}",
        f"setup: {setup_text(setup)}; schedule for p = {decision.p:g}, k up to {decision.k_max}, "
        f"batches 1 to {decision.batch_limit}",
        *(f"note: {note}" for note in notes),
        *(f"not checked: {item}" for item in unchecked),
    ]
    return "".join(f"# {line}\n" for line in lines)
