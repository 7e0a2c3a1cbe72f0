"""The command line answers as the API does, shows its defaults, and reads the same bounds and defaults."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.cli import build_parser, main
from app.model import limits
from app.model.cost.regimes import REGIME_NAMES
from app.service import decision_inputs, plan_inputs, rollout_inputs
from app.service.inputs import Input


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


QUESTIONS = [
    (["speedup", "--p", "0.9", "--k", "5", "--c", "0.1"], "/api/v1/speedup", {"p": 0.9, "k": 5, "c": 0.1}),
    (["speedup"], "/api/v1/speedup", {}),
    (["optimal-k", "--p", "0.99", "--c", "0.15"], "/api/v1/optimal-k", {"p": 0.99, "c": 0.15}),
    (["optimal-k", "--p", "0.5", "--c", "0", "--k-max", "20"], "/api/v1/optimal-k", {"p": 0.5, "c": 0, "k_max": 20}),
    (["curve"], "/api/v1/curve", {}),
    (
        ["curve", "--p", "0.8", "--k", "5", "--c", "0.2", "--k-max", "16", "--band", "0.05", "--c-ops", "0.3"],
        "/api/v1/curve",
        {"p": 0.8, "k": 5, "c": 0.2, "k_max": 16, "band": 0.05, "c_ops": 0.3},
    ),
    (["schedule"], "/api/v1/regimes/schedule", {}),
    (["schedule", "--p", "0.9", "--k-max", "3"], "/api/v1/regimes/schedule", {"p": 0.9, "k_max": 3}),
    (["schedule", "--mean-length", "3", "--k", "4"], "/api/v1/regimes/schedule", {"mean_length": 3, "k": 4}),
    (["schedule", "--rate", "0.6", "--k", "3"], "/api/v1/regimes/schedule", {"rate": 0.6, "k": 3}),
    (
        ["schedule", "--p", "0.7", "--profile", "0.9,0.8,0.6"],
        "/api/v1/regimes/schedule",
        {"p": 0.7, "profile": "0.9,0.8,0.6"},
    ),
    (["trees"], "/api/v1/trees", {}),
    (
        ["trees", "--budget", "32", "--regime", "memory-bound"],
        "/api/v1/trees",
        {"budget": 32, "regime": "memory-bound"},
    ),
    (["sources"], "/api/v1/draft-sources", {}),
    (["calibrate", "--rate", "0.7", "--k", "4"], "/api/v1/calibrate/rate", {"rate": 0.7, "k": 4}),
    (["table"], "/api/v1/regimes/table", {}),
]


@pytest.mark.parametrize(("argv", "path", "params"), QUESTIONS, ids=lambda item: " ".join(map(str, item))[:40])
def test_cli_and_api_give_the_same_answer(
    capsys: pytest.CaptureFixture[str], client: TestClient, argv: list[str], path: str, params: dict[str, Any]
) -> None:
    from_cli = cli_json(capsys, *argv)
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    from_api = response.json()
    if path == "/api/v1/regimes/table":  # the API marks the page's (p, k) as well; the CLI has no such mark
        from_api = {key: value for key, value in from_api.items() if key in from_cli}
        from_cli = {key: value for key, value in from_cli.items() if key in from_api}
    assert from_cli == from_api


def test_trees_budget_64_answers_alike(capsys: pytest.CaptureFixture[str], client: TestClient) -> None:
    # specdec-lab trees --budget 64 answered 3.48x where the page answered 2.60x (different defaults for c).
    from_cli = cli_json(capsys, "trees", "--budget", "64")
    from_api = client.get("/api/v1/trees", params={"budget": 64}).json()
    assert from_cli["best_speedup"] == from_api["best_speedup"]
    assert from_cli["regime"] == from_api["regime"]


def test_text_output_of_the_new_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["optimal-k", "--p", "0.99", "--c", "0.15", "--k-max", "8"]) == 0
    out = capsys.readouterr().out
    assert "best k = 8 of 1..8" in out and "limit reached" in out
    assert main(["optimal-k", "--p", "0.1", "--c", "0.9"]) == 0
    assert "do not speculate" in capsys.readouterr().out
    assert main(["curve", "--p", "0.75", "--k", "6", "--c", "0.15"]) == 0
    out = capsys.readouterr().out
    assert "speedup 1.8242x" in out and "best k = 4 of 1..64" in out and "at c_ops = 0" in out
    assert main(["speedup"]) == 0
    assert "speedup 1.8242x" in capsys.readouterr().out


def test_schedule_says_when_k_max_binds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schedule", "--p", "0.95", "--k-max", "3"]) == 0
    out = capsys.readouterr().out
    assert "limit reached" in out and "3+" in out
    assert main(["schedule", "--p", "0.95"]) == 0
    out = capsys.readouterr().out
    assert f"k up to {limits.K_SEARCH_MAX}" in out and "limit reached" not in out


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(item for item in parser._actions if isinstance(item, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", sorted(_subparsers()))
def test_every_help_shows_the_defaults(command: str) -> None:
    parser = _subparsers()[command]
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        flag = isinstance(action, argparse._StoreConstAction)  # store_true and the like: no value to default
        if flag or not action.option_strings or action.default in (None, argparse.SUPPRESS) or action.dest == "help":
            continue
        assert f"(default: {action.default})" in text, (command, action.dest)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["schedule", "--bandwidth-efficiency", "1e-6"], "must be from 0.01 to 1"),
        (["schedule", "--compute-efficiency", "0.001"], "must be from 0.01 to 1"),
        (["trees", "--batch", "2048"], f"must be from 1 to {limits.MAX_BATCH}"),
        (["speedup", "--k", "65"], f"must be from 0 to {limits.K_MAX_LIMIT}"),
        (["speedup", "--c", "11"], f"must be from 0 to {limits.MAX_DRAFT_COST:g}"),
    ],
)
def test_cli_bounds_are_the_apis(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit):
        main(argv)
    assert message in capsys.readouterr().err


def test_api_floor_of_efficiency_is_the_same(client: TestClient) -> None:
    response = client.get("/api/v1/regimes/schedule", params={"bandwidth_efficiency": 1e-6})
    assert response.status_code == 422 and f"{limits.MIN_EFFICIENCY:g}" in response.json()["detail"][0]["msg"]


def test_regime_choices_are_one_list() -> None:
    for command in ("table", "calibrate", "sources", "trees"):
        parser = _subparsers()[command]
        for action in parser._actions:
            if action.dest in ("regime", "regime_a", "regime_b"):
                assert tuple(action.choices) == REGIME_NAMES


def test_defaults_are_read_from_one_place(client: TestClient) -> None:
    schedule = _subparsers()["schedule"]
    defaults = {action.dest: action.default for action in schedule._actions}
    assert defaults["compute_efficiency"] == limits.DEFAULT_COMPUTE_EFFICIENCY
    assert defaults["bandwidth_efficiency"] == limits.DEFAULT_BANDWIDTH_EFFICIENCY
    assert defaults["k_max"] == limits.K_SEARCH_MAX
    from app.model.cost.regimes import default_setup

    assert default_setup().compute_efficiency == limits.DEFAULT_COMPUTE_EFFICIENCY
    batch_bounds = {
        (path, parameter["schema"].get("maximum"))
        for path, item in client.get("/openapi.json").json()["paths"].items()
        for operation in item.values()
        for parameter in operation.get("parameters", ())
        if parameter["name"] == "batch"
    }
    assert len(batch_bounds) > 3 and {bound for _, bound in batch_bounds} == {limits.MAX_BATCH}, batch_bounds


def test_calibrate_and_sources_say_when_k_max_binds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--rate", "0.9", "--k", "4", "--c", "0.01", "--k-max", "4"]) == 0
    assert "limit reached: k_max = 4" in capsys.readouterr().out
    assert main(["sources", "--k-max", "2"]) == 0
    assert "limit reached for" in capsys.readouterr().out
    assert main(["sources"]) == 0
    assert "limit reached" not in capsys.readouterr().out


def _command(*names: str) -> argparse.ArgumentParser:
    """A command's parser, a subcommand's (rollout plan) through its parent."""
    parser = build_parser()
    for name in names:
        action = next(item for item in parser._actions if isinstance(item, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


OPTIONS_FROM_DECLARATIONS = [
    (("rollout", "check"), plan_inputs.LABEL),
    (("rollout", "plan"), plan_inputs.LABEL),
    (("rollout", "check"), rollout_inputs.WINDOW),
    (("rollout", "plan"), rollout_inputs.PLAN_WINDOW),
    (("rollout", "plan"), rollout_inputs.PROMETHEUS),
    (("rollout", "check"), plan_inputs.ENGINE),
    (("rollout", "plan"), plan_inputs.ENGINE),
    (("rollout", "check"), plan_inputs.ENGINE_VERSION),
    (("rollout", "plan"), plan_inputs.ENGINE_VERSION),
    (("watch",), rollout_inputs.PROMETHEUS),
    (("watch",), rollout_inputs.CALIBRATED),
    (("calibrate",), decision_inputs.BASELINE),
]


@pytest.mark.parametrize(
    ("command", "item"),
    OPTIONS_FROM_DECLARATIONS,
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else value.name,
)
def test_an_option_is_generated_from_its_declaration(command: tuple[str, ...], item: Input) -> None:
    parser = _command(*command)
    action = next(action for action in parser._actions if action.dest == item.name)
    assert action.option_strings == [item.option] and action.default == item.default
    if item.choices is not None:
        assert list(action.choices or ()) == list(item.choices())
    if item.default is not None:  # --help shows the declaration's default
        assert f"(default: {item.default})" in " ".join(parser.format_help().split())
    if item.max_length is not None:  # one character too many is refused, as the API refuses it
        with pytest.raises(argparse.ArgumentTypeError, match=f"{item.max_length:,} characters"):
            action.type("x" * (item.max_length + 1))  # type: ignore[misc]


def test_the_rollout_window_of_a_plan_is_declared_apart_from_the_checks() -> None:
    planned = _command("rollout").parse_args(["plan", "--from", "-"])
    checked = _command("rollout").parse_args(["check", "--prometheus", "u", "--canary", "a", "--control", "b"])
    assert (planned.window, checked.window) == (rollout_inputs.PLAN_WINDOW.default, rollout_inputs.WINDOW.default)


@pytest.mark.parametrize(
    "argv",
    [
        ["rollout", "plan", "--from", "-"],
        ["rollout", "check", "--prometheus", "http://127.0.0.1:1", "--canary", 'role="a"', "--control", 'role="b"'],
    ],
)
def test_the_rollout_label_refuses_what_the_api_refuses(
    capsys: pytest.CaptureFixture[str], client: TestClient, argv: list[str]
) -> None:
    from app.service.plan_inputs import MAX_LABEL
    from tests.test_rollout_plan import exposition

    long = "a" * (MAX_LABEL + 1)
    refused = client.post("/api/v1/rollout/plan", params={"label": long}, content=exposition(10.0))
    assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["query", "label"]
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--label", long])
    assert stopped.value.code == 2 and f"at most {MAX_LABEL} characters" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["rollout", "plan", "--from", "-"],
        ["rollout", "check", "--prometheus", "http://127.0.0.1:1", "--canary", 'role="a"', "--control", 'role="b"'],
    ],
)
def test_the_rollout_label_must_be_a_prometheus_label_name_on_the_cli_as_on_the_api(
    capsys: pytest.CaptureFixture[str], client: TestClient, argv: list[str]
) -> None:
    from tests.test_rollout_plan import exposition

    refused = client.post("/api/v1/rollout/plan", params={"label": "1bad"}, content=exposition(10.0))
    assert refused.status_code == 422 and "Prometheus label name" in refused.json()["detail"][0]["msg"]
    code = main([*argv, "--label", "1bad"])
    assert code == 2, code
    said = capsys.readouterr()
    assert "--label" in said.err + said.out and "Prometheus label name" in said.err + said.out


def test_a_rules_or_measuring_refusal_is_an_input_refusal_read_by_its_name() -> None:
    """The rules' and a measuring job's refusals are input refusals: the command line names the option and the API
    the parameter from the error's name (the API's 422s are in the rules and measure tests), never its words."""
    from app.cli.command import refusal
    from app.model.limits import InputError
    from app.model.rules import RulesError
    from app.service.measure_jobs import JobError

    for error in (RulesError("p_low", "must be below p"), JobError("max_requests", "too many")):
        assert isinstance(error, InputError)
        assert refusal(error) == f"--{error.name.replace('_', '-')}: {error.message}"
        assert str(error) == f"{error.name}: {error.message}"
