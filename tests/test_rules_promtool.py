"""The generated rules against Prometheus's own tools: `promtool check rules` on every engine version's file,
and `promtool test rules` unit tests, written here, that feed each engine's series in its own names and show
every alert firing when it should (a drop in acceptance, a batch that grows past the crossover) and staying
quiet when it should not (steady serving, a restart that resets the counters).

Nothing skips: without Debian's prometheus package (`make prometheus`) these tests fail and say so.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from app.model import engines, rules
from app.model.arithmetic import closed_form
from app.model.cost.capacity import decide
from app.model.engines.base import RulesMetrics
from app.service.regimes import SetupRequest, build_setup
from tests.planned import planned_rules

MINUTES = 60
CHANGE_AT = 30  # the minute the scenario changes
DRAFTS_PER_MINUTE = 600
K = 4
P_HIGH = 0.93  # mid-bin values: the best k read from the measured p is that of the bin's lower edge
P_LOW = 0.32  # speculation at k = 4 stops paying; the best k there is 1
BATCH = 8
BIG_BATCH = 600  # past the crossover of the setup below (speculation off from batch 147)
INSTANCE = "replica-1:8000"


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        raise RuntimeError("promtool is required for the rules tests: `make prometheus` installs Debian's prometheus")
    return found


def versions_with_rules() -> list[tuple[str, str]]:
    found = []
    for engine in engines.ENGINES:
        for version in engines.versions(engine):
            if not engines.adapter(engine).RULES_METRICS[version.name].missing:
                found.append((engine, version.name))
    return found


SETUP = build_setup(SetupRequest(model="dense-70b", draft="dense-3b", devices=8)).setup
P_SCHEDULE = 0.9
K_MAX = 4


def rules_for(engine: str, version: str, **extra: Any) -> rules.RulesFile:
    request = rules.RulesRequest(engine=engine, version=version, p=P_SCHEDULE, k_max=K_MAX, **extra)
    return planned_rules(request, SETUP)


@pytest.mark.parametrize(("engine", "version"), versions_with_rules())
def test_promtool_checks_every_generated_file(engine: str, version: str, tmp_path: Path) -> None:
    for extra in ({}, {"label": "instance", "hold": "0s", "window": "90s"}, {"match": 'job="serving",env=~"prod.*"'}):
        made = rules_for(engine, version, **extra)
        path = tmp_path / f"{engine}.yml"
        path.write_text(made.text)
        result = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"SUCCESS: {len(made.records) + len(made.alerts)} rules found" in result.stdout
        assert yaml.safe_load(made.text) == made.document


def test_every_engine_with_counters_has_rules_and_the_others_say_what_is_missing() -> None:
    assert {engine for engine, _ in versions_with_rules()} == set(engines.ENGINES)
    for engine, version in (("trtllm", "2025-10"), ("llamacpp", "2026-03")):
        with pytest.raises(rules.RulesError) as caught:
            rules_for(engine, version)
        assert caught.value.name == "engine_version" and "_total" in caught.value.message


# ---------------------------------------------------------------------------
# Synthetic series in each engine's own names


@dataclass(frozen=True)
class Minute:
    p: float
    batch: int
    reset: bool = False  # the server restarted at the start of this minute


def scenario(kind: str) -> list[Minute]:
    minutes = []
    for minute in range(MINUTES + 1):
        later = minute >= CHANGE_AT
        p = P_LOW if kind == "drop" and later else P_HIGH
        batch = BIG_BATCH if kind == "batch" and later else BATCH
        minutes.append(Minute(p, batch, reset=kind == "restart" and minute == CHANGE_AT))
    return minutes


def input_series(metrics: RulesMetrics, labels: str, minutes: list[Minute]) -> list[dict[str, str]]:
    """Each series the engine exports, minute by minute, for i.i.d. acceptance p at draft length K."""
    values: dict[str, list[float]] = {}
    totals: dict[str, float] = {}

    def add(name: str, value: float, gauge: bool = False) -> None:
        if not name.endswith("}"):
            name += "{" + labels + "}"
        if gauge:
            values.setdefault(name, []).append(value)
        else:
            totals[name] = totals.get(name, 0.0) + value
            values.setdefault(name, []).append(totals[name])

    for index, minute in enumerate(minutes):
        if minute.reset:
            totals.clear()
        drafts = float(DRAFTS_PER_MINUTE if index else 0)
        reached = [drafts * minute.p ** (i + 1) for i in range(K)]
        tokens = closed_form.expected_tokens(minute.p, K)
        add(metrics.running, float(minute.batch), gauge=True)
        for name, value in (
            (metrics.drafts, drafts),
            (metrics.draft_tokens, drafts * K),
            (metrics.accepted, sum(reached)),
            (metrics.verify_calls, drafts),
            (metrics.generated, drafts * tokens),
        ):
            if name:
                add(name, value)
        for position in range(K):
            at = f'{{{labels}{"," if labels else ""}{metrics.position_label}="{position}"}}'
            if metrics.per_position:
                add(metrics.per_position + at, reached[position])
            if metrics.drafted_per_position:
                add(metrics.drafted_per_position + at, drafts)
        if metrics.running_k:
            add(metrics.running_k, float(K), gauge=True)
        if metrics.accept_length:
            add(metrics.accept_length, tokens, gauge=True)
    return [{"series": name, "values": " ".join(f"{value:.6f}" for value in series)} for name, series in values.items()]


ENGINE_LABELS = {
    "vllm": f'instance="{INSTANCE}",model_name="m",engine="0"',
    "sglang": f'instance="{INSTANCE}",model_name="m"',
    "trtllm": f'instance="{INSTANCE}",model_name="m",engine_type="trtllm"',
    "llamacpp": f'instance="{INSTANCE}"',  # llama-server's series carry no labels of their own
}


def recommended(p: float, batch: int) -> int:
    low = math.floor(p / rules.P_STEP + 1e-9) * rules.P_STEP
    decision = decide(low, SETUP, K_MAX, 1024)
    return decision.best_k[min(batch, decision.batch_limit) - 1]


def expected(made: rules.RulesFile, name: str, value: float) -> dict[str, object]:
    labels = {"instance": INSTANCE}
    if made.engine != "llamacpp":
        labels["model_name"] = "m"
    alert = made.alert(name)
    return {
        "exp_labels": {**labels, rules.RULES_LABEL: made.rules_id, "severity": rules.SEVERITY},
        "exp_annotations": {
            "summary": alert.summary.render(labels, value),
            "description": alert.description.render(labels, value),
        },
    }


def run_unit_tests(made: rules.RulesFile, tests: list[dict[str, object]], tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(made.text)
    document = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(document, sort_keys=False, width=4096))
    result = subprocess.run(
        [promtool(), "test", "rules", "test.yml"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def checks(made: rules.RulesFile, kind: str) -> list[dict[str, object]]:
    """What must fire (and nothing else) at minutes before and after the change."""
    names = [alert.name for alert in made.alerts]
    before = [{"eval_time": f"{CHANGE_AT - 1}m", "alertname": name, "exp_alerts": []} for name in names]
    # The window (5m) fills within five minutes of the change; the hold (10m) keeps the alert pending until then.
    pending = [{"eval_time": f"{CHANGE_AT + 8}m", "alertname": name, "exp_alerts": []} for name in names]
    late = f"{MINUTES}m"
    firing: dict[str, list[dict[str, object]]] = {name: [] for name in names}
    if kind == "drop":
        k = recommended(P_LOW, BATCH)
        firing[rules.NOT_PAYING] = [expected(made, rules.NOT_PAYING, k)]
        firing[rules.ACCEPTANCE_LOW] = [expected(made, rules.ACCEPTANCE_LOW, k)]
    elif kind == "batch":
        firing[rules.NOT_PAYING] = [expected(made, rules.NOT_PAYING, recommended(P_HIGH, BIG_BATCH))]
        # the schedule the alert holds the server to is the k the plan's config runs at that batch: a server that
        # keeps running K is off it only where the config says otherwise (never for an engine that takes one k)
        schedule_k = made.engine_k[BIG_BATCH - 1]
        seen = made.metrics.k_from in ("gauge", "positions") or schedule_k < K  # drafts longer than the schedule
        if rules.OFF_SCHEDULE in names and schedule_k != K and seen:
            firing[rules.OFF_SCHEDULE] = [expected(made, rules.OFF_SCHEDULE, schedule_k)]
    after = [{"eval_time": late, "alertname": name, "exp_alerts": firing[name]} for name in names]
    return before + (pending if kind != "steady" else []) + after


@pytest.mark.parametrize(("engine", "version"), versions_with_rules())
def test_promtool_unit_tests_show_each_alert_firing_and_quiet(engine: str, version: str, tmp_path: Path) -> None:
    made = rules_for(engine, version)
    assert recommended(P_LOW, BATCH) == 1 and recommended(P_HIGH, BIG_BATCH) == 0
    assert recommended(P_HIGH, BATCH) == made.decision.best_k[BATCH - 1] == K
    tests = []
    for kind in ("steady", "drop", "batch", "restart"):
        series = input_series(made.metrics, ENGINE_LABELS[engine], scenario(kind))
        tests.append({"interval": "1m", "input_series": series, "alert_rule_test": checks(made, kind)})
    run_unit_tests(made, tests, tmp_path)


@pytest.mark.parametrize(("engine", "version"), versions_with_rules())
def test_promtool_unit_tests_check_the_recorded_values(engine: str, version: str, tmp_path: Path) -> None:
    """At steady serving: tokens per verification, p, break-even and speedup against the roofline, the k's."""
    made = rules_for(engine, version)
    labels = {"instance": INSTANCE} | ({} if engine == "llamacpp" else {"model_name": "m"})
    labels[rules.RULES_LABEL] = made.rules_id
    tokens = closed_form.expected_tokens(P_HIGH, K)
    cost = float(rules.cycle_cost(SETUP, np.array([float(BATCH)]), np.array([float(K)]))[0])
    exact_p = made.metrics.per_position != ""
    wanted = [
        (rules.TOKENS, tokens, 1e-6),
        (rules.ACCEPTANCE, P_HIGH, 1e-6 if exact_p else rules.P_TOLERANCE),
        (rules.BREAK_EVEN, cost, cost * rules.COST_TOLERANCE),
        # a cost within COST_TOLERANCE of the roofline below it puts tokens / cost up to COST_TOLERANCE / (1 -
        # COST_TOLERANCE) above (0.5% low reads 0.5025% high)
        (rules.SPEEDUP, tokens / cost, tokens / cost * rules.COST_TOLERANCE / (1 - rules.COST_TOLERANCE)),
        (rules.RUNNING_BATCH, float(BATCH), 1e-9),
        (rules.SCHEDULE_K, float(K), 1e-9),
        (rules.RECOMMENDED_K, float(K), 1e-9),
    ]
    if rules.RUNNING_K in made.records:
        wanted.append((rules.RUNNING_K, float(K), 1e-9))
    if rules.DRAFTS in made.records:
        wanted.append((rules.DRAFTS, DRAFTS_PER_MINUTE * 5.0, 1e-6))
    selector = "{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}"
    tests: list[dict[str, object]] = [
        {
            "expr": f"abs({name} - {value!r}) <= bool {tolerance!r}",
            "eval_time": f"{MINUTES}m",
            "exp_samples": [{"labels": selector, "value": 1}],
        }
        for name, value, tolerance in wanted
    ]
    if rules.AT_POSITION in made.records:
        at = "{" + ",".join(f'{key}="{value}"' for key, value in {**labels, "position": "1"}.items()) + "}"
        tests.append(
            {
                "expr": f'abs({rules.AT_POSITION}{{position="1"}} - {P_HIGH**2!r}) <= bool 1e-6',
                "eval_time": f"{MINUTES}m",
                "exp_samples": [{"labels": at, "value": 1}],
            }
        )
    series = input_series(made.metrics, ENGINE_LABELS[engine], scenario("steady"))
    run_unit_tests(made, [{"interval": "1m", "input_series": series, "promql_expr_test": tests}], tmp_path)
