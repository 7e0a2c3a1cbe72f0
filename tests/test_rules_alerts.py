"""The alerts of the rules (app.model.rules.alerts): each says what to do, and every template renders."""

from __future__ import annotations

from typing import Any

from app.model import engines, rules
from app.service.regimes import SetupRequest, build_setup
from tests.planned import planned_rules

SETUP = build_setup(SetupRequest(model="dense-70b", draft="dense-3b", devices=8)).setup


def rules_for(engine: str = "vllm", **extra: Any) -> rules.RulesFile:
    return planned_rules(rules.RulesRequest(engine=engine, p=0.9, k_max=4, **extra), SETUP)


def test_every_alert_says_what_to_do_and_every_template_renders() -> None:
    for engine in engines.ENGINES:
        made = rules_for(engine)
        for alert in made.alerts:
            labels = {"instance": "a:1", "model_name": "m"}
            off, on = alert.summary.render(labels, 0.0), alert.summary.render(labels, 3.0)
            assert "off" in off and ("k = 3" in on), (alert.name, off, on)
            assert "a:1" in on and "model_name=m" in on
            assert "{{" not in alert.description.render(labels, 2.0)
            rule = next(r for r in made.document["groups"][0]["rules"] if r.get("alert") == alert.name)
            assert rule["for"] == "10m" and rule["labels"]["severity"] == rules.SEVERITY
            assert rule["annotations"]["summary"] == alert.summary.go()
    assert "cannot be checked" in " ".join(rules_for("sglang", version="2026-03").unchecked)


def test_an_alert_described_for_any_value_names_the_k_and_both_actions() -> None:
    template = rules.Template(
        ("On ", rules.Field("label", "instance"), ": ", rules.Field("action", "turn it off|run k = "), ".")
    )
    assert template.described({"instance": "an instance"}) == "On an instance: run k = k (or turn it off)."
    assert template.render({"instance": "a:1"}, 3.0) == "On a:1: run k = 3."
    assert template.render({"instance": "a:1"}, 0.0) == "On a:1: turn it off."
