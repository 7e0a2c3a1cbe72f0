"""Every answer that predicts says where its numbers come from and how far off to expect them: the batch sweep, the
schedule, the engine's config, the rules (JSON and a comment in the file) and the dashboard (a field and its
description); with a measured sweep's terms each says "measured" with the fit's out-of-sample error."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml
from fastapi.testclient import TestClient

from app.cli import main
from app.model.cost import published
from app.model.cost.published import Stretch
from app.model.cost.regimes import default_setup
from app.service.regimes import off_range_text
from tests.samples.step_times import example_step_times

PLAN = "engine=vllm&model=dense-70b&p=0.8"
PREDICTING = (
    "/api/v1/regimes/speedup-vs-batch?p=0.8",
    "/api/v1/regimes/schedule?p=0.8",
    f"/api/v1/engine-config?{PLAN}",
    f"/api/v1/rules?{PLAN}",
    f"/api/v1/dashboard?{PLAN}",
)


def _step_fit(client: TestClient, query: str = "") -> dict[str, object]:
    server = dataclasses.replace(default_setup(), bandwidth_efficiency=0.45, compute_efficiency=0.3)
    body = example_step_times(server, [1, 2, 4, 8, 16, 32], [1, 4], noise=0.01, seed=5)
    answer = client.post(f"/api/v1/step-fit?{query}", content=body, headers={"content-type": "text/plain"})
    assert answer.status_code == 200, answer.text
    fitted: dict[str, object] = answer.json()
    return fitted


@pytest.mark.parametrize("path", PREDICTING)
def test_every_predicting_endpoint_says_where_its_numbers_come_from(client: TestClient, path: str) -> None:
    defaults = client.get(path).json()["accuracy"]
    shipped = published.shipped_accuracy()
    own = published.accuracy_for(published.class_of_setup(default_setup()))  # a draft model on one H100, short
    assert defaults["source"] == "defaults" and defaults["summary"].startswith(own.sentence)
    assert defaults["setup_class"] == own.setup_class and defaults["class_points"] == own.class_points
    assert defaults["median_error"] == pytest.approx(shipped.median_error)
    assert defaults["published_points"] == shipped.points
    fitted = _step_fit(client, "model=dense-70b" if "engine" in path else "")
    measured = client.get(f"{path}&{fitted['query']}").json()["accuracy"]
    assert measured["source"] == "measured" and measured["measured_steps"] == fitted["rows"] == 12
    assert measured["summary"].startswith(
        f"measured: fitted to 12 steps, out-of-sample error {fitted['holdout_error']:.0%}"
    )
    given = client.get(f"{path}&bandwidth_efficiency=0.5").json()["accuracy"]
    assert given["source"] == "given"


def test_the_rules_file_and_the_dashboard_say_it_in_words(client: TestClient) -> None:
    rules = client.get(f"/api/v1/rules?{PLAN}").json()
    comment = f"# how good: {rules['accuracy']['summary']}\n"
    assert comment in rules["yaml"]
    file = client.get(f"/api/v1/rules?{PLAN}&format=yaml").text
    assert comment in file and yaml.safe_load(file) == {"groups": rules["groups"]}  # a comment, not data
    board = client.get(f"/api/v1/dashboard?{PLAN}").json()
    assert board["description"].endswith(f"; how good: {board['accuracy']['summary']}")
    config = client.get(f"/api/v1/engine-config?{PLAN}").json()
    assert config["accuracy"] == config["schedule"]["accuracy"] == rules["accuracy"]


def test_the_command_lines_rules_and_dashboard_say_it_too(capsys: pytest.CaptureFixture[str]) -> None:
    sentence = published.accuracy_for(published.class_of_setup(default_setup())).sentence
    assert main(["rules", "--engine", "vllm", "--model", "dense-70b", "--p", "0.8"]) == 0
    assert f"# how good: {sentence}" in capsys.readouterr().out
    assert main(["rules", "--engine", "vllm", "--model", "dense-70b", "--p", "0.8", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"]["source"] == "defaults"
    assert main(["dashboard", "--engine", "vllm", "--model", "dense-70b", "--p", "0.8"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["accuracy"]["source"] == "defaults" and sentence in board["description"]


def test_config_rules_and_dashboard_take_a_measured_sweep(
    capsys: pytest.CaptureFixture[str], tmp_path: pytest.TempPathFactory
) -> None:
    server = dataclasses.replace(default_setup(), bandwidth_efficiency=0.45, compute_efficiency=0.3)
    path = tmp_path / "sweep.csv"  # type: ignore[operator]
    path.write_text(example_step_times(server, [1, 2, 4, 8, 16, 32], [1, 4], noise=0.01, seed=5), encoding="utf-8")
    plan = ["--engine", "vllm", "--p", "0.8", "--step-fit", str(path)]
    assert main(["config", *plan, "--format", "json"]) == 0
    config = json.loads(capsys.readouterr().out)
    assert config["accuracy"]["source"] == "measured" and config["accuracy"]["measured_steps"] == 12
    assert main(["config", *plan]) == 0
    assert "how good: measured: fitted to 12 steps" in capsys.readouterr().out
    assert main(["rules", *plan]) == 0
    assert "# how good: measured: fitted to 12 steps" in capsys.readouterr().out
    assert main(["dashboard", *plan]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"]["source"] == "measured"
    assert main(["config", "--engine", "vllm", "--step-fit", str(tmp_path / "none.csv")]) == 2  # type: ignore[operator]
    assert "--step-fit" in capsys.readouterr().err


def test_each_run_is_said_as_what_lies_either_side_of_it() -> None:
    """A run followed by batches that surely pay is where speculation may not pay; one followed by batches that
    surely lose is where it stops; one to the last batch is where it may stop; surely losing before the first run
    is said too."""
    rising = [Stretch(4, 8, False, True)]
    assert off_range_text(rising) == (
        "within the stated error it does not pay below batch 4; it may not pay at batches 4 to 8, and pays past batch 8"
    )
    dipping = [Stretch(1, 1, None, True), Stretch(125, None, True, None)]
    assert off_range_text(dipping) == (
        "within the stated error it may not pay at batch 1, and pays past batch 1; it may stop paying from batch 125 on"
    )
    assert off_range_text([Stretch(26, 41, True, False)]) == (
        "within the stated error it stops paying between batch 26 and batch 41"
    )
    assert off_range_text([]) == ""
