"""The canary's rules (app.model.rules.canary) against Prometheus's own tools: `promtool check rules` with the
canary's record and alert in every engine's file, and `promtool test rules` feeding each engine's decode-time
series in its own names: the alert fires, saying to roll that class back, when the canary turns slower than
control, and stays quiet while it is faster.

Nothing skips: without Debian's prometheus package (`make prometheus`) these tests fail and say so.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from app.model import engines, rules
from app.model.engines.base import DecodeTime
from tests.test_rules_promtool import promtool, rules_for, versions_with_rules

MINUTES = 40
CHANGE_AT = 20
TOKENS_PER_MINUTE = 1200.0
REQUESTS_PER_MINUTE = 10.0
CONTROL_S, FAST_S, SLOW_S = 0.040, 0.020, 0.060  # seconds per token: control, a faster and a slower canary
CANARY, CONTROL = 'role="canary"', 'role="control"'
CLASS_LABELS = {"vllm": 'model_name="m"', "sglang": 'model_name="m"', "trtllm": 'model_name="m"', "llamacpp": ""}


def newest() -> list[tuple[str, str]]:
    found: dict[str, str] = {}
    for engine, version in versions_with_rules():
        found[engine] = version
    return sorted(found.items())


def decode_series(series: DecodeTime, labels: str, per_token: list[float]) -> list[dict[str, str]]:
    """One replica's decode-time counters, minute by minute, at these seconds per token."""
    totals = {"seconds": 0.0, "tokens": 0.0, "first": 0.0}
    rows: dict[str, list[float]] = {"seconds": [], "tokens": [], "first": []}
    for minute, seconds_per_token in enumerate(per_token):
        if minute:
            if series.per_request:  # one observation per request: its per-token time
                totals["seconds"] += REQUESTS_PER_MINUTE * seconds_per_token
                totals["tokens"] += REQUESTS_PER_MINUTE
            else:
                totals["seconds"] += TOKENS_PER_MINUTE * seconds_per_token
                totals["tokens"] += TOKENS_PER_MINUTE + (REQUESTS_PER_MINUTE if series.first_tokens else 0.0)
                totals["first"] += REQUESTS_PER_MINUTE
        for key in rows:
            rows[key].append(totals[key])
    names = {"seconds": series.seconds, "tokens": series.tokens, "first": series.first_tokens}
    return [
        {"series": f"{names[key]}{{{labels}}}", "values": " ".join(f"{value:.6f}" for value in rows[key])}
        for key in rows
        if names[key]
    ]


def made_for(engine: str, version: str) -> rules.RulesFile:
    return rules_for(engine, version, canary=CANARY, control=CONTROL, window="5m", hold="5m")


@pytest.mark.parametrize(("engine", "version"), newest())
def test_the_canary_rules_fire_on_a_slower_canary_and_stay_quiet_on_a_faster_one(
    engine: str, version: str, tmp_path: Path
) -> None:
    made = made_for(engine, version)
    assert rules.CANARY_SPEEDUP in made.records and made.alert(rules.CANARY_SLOWER)
    (tmp_path / "rules.yml").write_text(made.text)
    checked = subprocess.run([promtool(), "check", "rules", "rules.yml"], capture_output=True, text=True, cwd=tmp_path)
    assert checked.returncode == 0 and f"SUCCESS: {len(made.records) + len(made.alerts)} rules found" in checked.stdout
    series = engines.adapter(engine).DECODE_TIME
    klass = CLASS_LABELS[engine]
    labels = {} if not klass else {"model_name": "m"}

    def replica(role: str, instance: str, per_token: list[float]) -> list[dict[str, str]]:
        joined = ",".join(part for part in (f'instance="{instance}"', f'role="{role}"', klass) if part)
        return decode_series(series, joined, per_token)

    steady = [CONTROL_S] * (MINUTES + 1)
    regression = [FAST_S if minute < CHANGE_AT else SLOW_S for minute in range(MINUTES + 1)]
    alert = made.alert(rules.CANARY_SLOWER)
    speedup = CONTROL_S / SLOW_S
    fired = {
        "exp_labels": {**labels, rules.RULES_LABEL: made.rules_id, "severity": rules.SEVERITY},
        "exp_annotations": {
            "summary": alert.summary.render(labels, speedup),
            "description": alert.description.render(labels, speedup),
        },
    }
    assert alert.summary.render(labels, speedup).startswith("Roll back speculation")
    tests = [
        {  # a faster canary: the record holds its speedup, and the alert stays quiet
            "interval": "1m",
            "input_series": replica("control", "c:1", steady) + replica("canary", "s:1", [FAST_S] * (MINUTES + 1)),
            "promql_expr_test": [
                {
                    "expr": f"abs({rules.CANARY_SPEEDUP} - {CONTROL_S / FAST_S!r}) <= bool 1e-6",
                    "eval_time": f"{MINUTES}m",
                    "exp_samples": [
                        {
                            "labels": "{"
                            + ",".join(f'{k}="{v}"' for k, v in {**labels, rules.RULES_LABEL: made.rules_id}.items())
                            + "}",
                            "value": 1,
                        }
                    ],
                }
            ],
            "alert_rule_test": [{"eval_time": f"{MINUTES}m", "alertname": rules.CANARY_SLOWER, "exp_alerts": []}],
        },
        {  # the canary turns slower at CHANGE_AT: quiet before, pending within the hold, firing after
            "interval": "1m",
            "input_series": replica("control", "c:1", steady) + replica("canary", "s:1", regression),
            "alert_rule_test": [
                {"eval_time": f"{CHANGE_AT - 1}m", "alertname": rules.CANARY_SLOWER, "exp_alerts": []},
                {"eval_time": f"{CHANGE_AT + 4}m", "alertname": rules.CANARY_SLOWER, "exp_alerts": []},
                {"eval_time": f"{MINUTES}m", "alertname": rules.CANARY_SLOWER, "exp_alerts": [fired]},
            ],
        },
    ]
    document = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(document, sort_keys=False, width=4096))
    result = subprocess.run(
        [promtool(), "test", "rules", "test.yml"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("extra", "name"),
    [
        ({"canary": CANARY}, "control"),
        ({"control": CONTROL}, "canary"),
        ({"canary": CANARY, "control": CANARY}, "control"),
        ({"canary": "role=canary", "control": CONTROL}, "canary"),
    ],
)
def test_canary_rules_need_two_distinct_matchers(extra: dict[str, str], name: str) -> None:
    with pytest.raises(rules.RulesError) as caught:
        rules.check(rules.RulesRequest(engine="vllm", **extra))
    assert caught.value.name == name


def test_the_canary_rules_come_from_the_plan_that_writes_the_config() -> None:
    """The same request through the plan: the config, the schedule alerts and the canary's rules in one file."""
    made = made_for("vllm", engines.versions("vllm")[-1].name)
    plain = rules_for("vllm", engines.versions("vllm")[-1].name, window="5m", hold="5m")
    assert made.engine_k == plain.engine_k and made.decision.best_k == plain.decision.best_k
    assert set(plain.records) | {rules.CANARY_SPEEDUP} == set(made.records)


def test_the_api_takes_canary_and_control_and_names_the_one_missing() -> None:
    from fastapi.testclient import TestClient

    from app.web.main import app

    client = TestClient(app)
    both = {"engine": "vllm", "canary": CANARY, "control": CONTROL, "format": "yaml"}
    answered = client.get("/api/v1/rules", params=both)
    assert (
        answered.status_code == 200 and rules.CANARY_SPEEDUP in answered.text and rules.CANARY_SLOWER in answered.text
    )
    refused = client.get("/api/v1/rules", params={"engine": "vllm", "canary": CANARY})
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["query", "control"]
    assert "is required with canary" in refused.json()["detail"][0]["msg"]
