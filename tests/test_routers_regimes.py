from __future__ import annotations

import csv
import dataclasses
import io
import itertools
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.model.arithmetic import closed_form as cf
from app.model.cost import fitting, published
from app.model.cost.presets import ACCELERATOR_FIELDS, ACCELERATORS, MODEL_FIELDS, MODELS
from app.model.cost.regimes import (
    default_setup,
    plain_roofline,
    roofline_draft_cost,
    roofline_speedup,
    roofline_verification,
)
from app.web.pages.text import fixed

REGIMES = "/api/v1/regimes"
# The plain roofline's terms as query parameters (the defaults are the terms fitted to published measurements)
PLAIN_ROOFLINE = dataclasses.asdict(fitting.PLAIN_ROOFLINE)


def test_presets_list_everything_with_dense_figures(client: TestClient) -> None:
    body = client.get("/api/v1/presets").json()
    assert [item["key"] for item in body["accelerators"]] == list(ACCELERATORS)
    assert [item["key"] for item in body["models"]] == list(MODELS)
    h100 = next(item for item in body["accelerators"] if item["key"] == "h100-sxm")
    assert (h100["bandwidth_tb_s"], h100["bf16_tflops"], h100["memory_gb"]) == (3.35, 989.4, 80.0)
    mixtral = next(item for item in body["models"] if item["key"] == "mixtral-8x7b")
    assert mixtral["experts"] == 8 and mixtral["experts_per_token"] == 2
    assert mixtral["routed_params_b"] + mixtral["shared_params_b"] == pytest.approx(46.7)
    assert body["weight_formats"] == {"bf16": 2.0, "fp8": 1.0, "int4": 0.5}
    assert body["regimes"] == ["memory-bound", "compute-bound", "linear", "roofline"]
    defaults = body["defaults"]
    assert defaults["accelerator"]["key"] == "h100-sxm" and defaults["target"]["key"] == "dense-8b"
    assert defaults["devices"] == 1 and defaults["devices_auto"] is True


@pytest.mark.parametrize(
    ("regime", "extra", "expected_v"),
    [
        ("memory-bound", {}, lambda k: 1.0),
        ("compute-bound", {}, lambda k: k + 1.0),
        ("linear", {"beta": 0.25}, lambda k: 1 + 0.25 * k),
    ],
)
def test_verification_cost_of_simple_regimes(
    client: TestClient, regime: str, extra: dict[str, float], expected_v: object
) -> None:
    params = {"regime": regime, "p": 0.8, "k": 4, "c": 0.1, "k_max": 6, **extra}
    body = client.get(f"{REGIMES}/verification-cost", params=params).json()
    assert callable(expected_v)
    assert [point["verification_cost"] for point in body["points"]] == [expected_v(k) for k in range(7)]
    verify = lambda k: expected_v(k)  # noqa: E731
    assert body["speedup"] == pytest.approx(cf.speedup(0.8, 4, 0.1, verify))
    assert (body["best_k"], body["best_speedup"]) == pytest.approx(cf.best_k(0.8, 0.1, 6, verify))
    assert body["draft_cost"] == 0.1
    assert body["setup"] is None
    if regime == "compute-bound":
        assert body["best_k"] == 0 and body["break_even_acceptance"] is None


def test_verification_cost_on_the_roofline(client: TestClient) -> None:
    # the plain roofline: at batch one a dense target's k + 1 tokens cost one pass (no cycle time of its own)
    plain = {"regime": "roofline", **PLAIN_ROOFLINE}
    dense = client.get(f"{REGIMES}/verification-cost", params={**plain, "batch": 1}).json()
    assert all(point["verification_cost"] == 1.0 for point in dense["points"])
    assert dense["draft_cost"] == pytest.approx(float(roofline_draft_cost(plain_roofline(default_setup()), 1)))
    assert dense["points"][4]["compute_bound"] is False and dense["points"][4]["step_ms"] > 0
    moe = client.get(f"{REGIMES}/verification-cost", params={**plain, "batch": 1, "model": "mixtral-8x7b"}).json()
    costs = [point["verification_cost"] for point in moe["points"]]
    assert costs[0] == 1.0 and all(b > a for a, b in itertools.pairwise(costs))
    busy = client.get(f"{REGIMES}/verification-cost", params={**plain, "batch": 1024}).json()
    assert busy["points"][8]["compute_bound"] is True
    verify = roofline_verification(plain_roofline(default_setup()), 1024)
    assert busy["points"][8]["verification_cost"] == pytest.approx(verify(8))
    assert busy["label"].endswith("batch 1024")


def test_speedup_vs_batch(client: TestClient) -> None:
    params = {"p": 0.8, "k": 4, "context": 0, "batch": 64}
    body = client.get(f"{REGIMES}/speedup-vs-batch", params=params).json()
    batches = body["batches"]
    assert batches[0] == 1 and batches[-1] == 1024 and batches == sorted(set(batches))
    setup = default_setup().__class__(**{**default_setup().__dict__, "context_tokens": 0})
    assert np.allclose(body["speedup"], roofline_speedup(0.8, 4, setup, np.array(batches)), rtol=1e-12)
    crossover = body["crossover_batch"]
    assert crossover is not None and crossover in batches and crossover - 1 in batches
    index = batches.index(crossover)
    assert body["speedup"][index - 1] > 1.0 >= body["speedup"][index]
    assert body["current"]["batch"] == 64
    assert body["current"]["speedup"] == pytest.approx(float(roofline_speedup(0.8, 4, setup, 64)))
    assert body["break_even_speedup"] == 1.0
    assert body["best_crossover_batch"] >= crossover
    assert len(body["fits"]) == len(batches) == len(body["best_k"])


def test_crossover_falls_with_k_through_the_api(client: TestClient) -> None:
    # the plain roofline: with a cycle's own time to spread over more tokens, a longer draft can pay longer
    params = {"model": "dense-70b", "devices": 8, **PLAIN_ROOFLINE}
    crossovers = [
        client.get(f"{REGIMES}/speedup-vs-batch", params={**params, "k": k}).json()["crossover_batch"]
        for k in (1, 2, 4, 8)
    ]
    assert crossovers == sorted(crossovers, reverse=True) and crossovers[0] > crossovers[-1]


def test_schedule_json_and_csv_agree(client: TestClient) -> None:
    params = {"p": 0.8, "k_max": 8, "context": 0}
    body = client.get(f"{REGIMES}/schedule", params=params).json()
    steps = body["steps"]
    assert steps[0]["batch_from"] == 1 and steps[-1]["batch_to"] == 1024
    assert body["thresholds"] == {str(step["batch_from"]): step["k"] for step in steps}
    assert body["off_from_batch"] == steps[-1]["batch_from"] and steps[-1]["k"] == 0
    response = client.get(f"{REGIMES}/schedule", params={**params, "format": "csv"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    assert "attachment" in response.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert [(int(row["batch_from"]), int(row["k"])) for row in rows] == [(s["batch_from"], s["k"]) for s in steps]


def test_table_shows_win_turning_into_loss(client: TestClient) -> None:
    body = client.get(f"{REGIMES}/table").json()
    assert body["regime_a"]["name"] == "memory-bound" and body["regime_b"]["name"] == "compute-bound"
    assert len(body["p_values"]) == 10 and body["k_values"] == list(range(1, 9))
    highlight = body["highlight"]
    assert highlight["speedup_a"] > 2 and highlight["speedup_b"] < 1
    row, column = body["p_values"].index(highlight["p"]), highlight["k"] - 1
    assert body["speedup_a"][row][column] == highlight["speedup_a"]
    assert body["speedup_a"][row][column] == pytest.approx(cf.speedup(highlight["p"], highlight["k"], 0.15))
    assert body["setup"] is None
    roofline = client.get(
        f"{REGIMES}/table", params={"regime_a": "roofline", "batch_a": 1, "regime_b": "roofline", "batch_b": 1024}
    ).json()
    assert roofline["setup"]["accelerator"]["key"] == "h100-sxm"
    assert roofline["regime_b"]["batch"] == 1024


def test_table_csv(client: TestClient) -> None:
    response = client.get(
        f"{REGIMES}/table", params={"format": "csv", "k_max": 3, "p_min": 0.6, "p_max": 0.8, "p_step": 0.1}
    )
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.text)))
    assert rows[0] == ["regime", "label", "p", "k=1", "k=2", "k=3"]
    assert [row[0] for row in rows[1:]] == ["a"] * 3 + ["b"] * 3
    assert float(rows[1][3]) == pytest.approx(cf.speedup(0.6, 1, 0.15), abs=1e-6)


# Every editable preset field, with a value the preset accepts on its own.
ACCELERATOR_EDITS = {
    "bandwidth_tb_s": 4.2,
    "bf16_tflops": 700.0,
    "memory_gb": 40.0,
    "link_gb_s": 300.0,
    "links": 4,
    "fp8_tflops": 3000.0,
}
MODEL_EDITS = {
    "total_params_b": 9.5,
    "active_params_b": 7.5,
    "layers": 40,
    "query_heads": 40,
    "kv_heads": 4,
    "head_dim": 96,
    "kv_tensors": 1,
    "experts": 16,
    "experts_per_token": 1,
    "hidden": 3000,
}


def test_a_device_with_an_fp8_figure_of_its_own_is_named_with_it(client: TestClient) -> None:
    own = client.get(f"{REGIMES}/speedup-vs-batch", params={"hw_fp8_tflops": 3000}).json()["setup"]["accelerator"]
    assert own["name"] == "your accelerator (3.35 TB/s, 989.4 TFLOPS (3000 at FP8), 80 GB)"
    other = client.get(f"{REGIMES}/speedup-vs-batch", params={"hw_memory_gb": 120}).json()["setup"]["accelerator"]
    assert other["name"] == "your accelerator (3.35 TB/s, 989.4 TFLOPS, 120 GB)"  # its FP8 figure is the preset's


def test_a_bf16_rate_of_the_users_own_takes_no_fp8_rate_from_the_preset(client: TestClient) -> None:
    """FP8 weights on a device given by its own BF16 rate multiply at that rate, not at the preset's FP8 rate (an
    integrated GPU of 59 TFLOPS edited from the H100 once multiplied FP8 weights at 1,979 TFLOPS)."""
    own = {"hw_bandwidth_tb_s": 0.256, "hw_bf16_tflops": 59, "weights": "fp8", "p": 0.8, "batch": 256}
    body = client.get(f"{REGIMES}/speedup-vs-batch", params=own).json()
    assert body["setup"]["accelerator"]["fp8_tflops"] is None
    given = client.get(f"{REGIMES}/speedup-vs-batch", params={**own, "hw_fp8_tflops": 118}).json()
    assert given["setup"]["accelerator"]["fp8_tflops"] == 118
    # at a batch where verification is compute-bound, twice the rate for FP8 weights makes it cheaper
    assert given["current"]["verify_step_ms"] < body["current"]["verify_step_ms"]
    same = client.get(f"{REGIMES}/speedup-vs-batch", params={"hw_bf16_tflops": 989.4}).json()["setup"]["accelerator"]
    assert same["name"] == "H100 SXM" and same["fp8_tflops"] == 1978.9  # the preset's own rate, written out


def test_edit_tables_cover_every_field() -> None:
    assert set(ACCELERATOR_EDITS) == set(ACCELERATOR_FIELDS)
    assert set(MODEL_EDITS) == set(MODEL_FIELDS)


EDITS = [("hw", "accelerator", field, value) for field, value in ACCELERATOR_EDITS.items()] + [
    (prefix, owner, field, value)
    for prefix, owner in (("model", "target"), ("draft", "draft"))
    for field, value in MODEL_EDITS.items()
]


@pytest.mark.parametrize(("prefix", "owner", "field", "value"), EDITS)
def test_every_preset_field_round_trips(client: TestClient, prefix: str, owner: str, field: str, value: float) -> None:
    base = {"k": 4, "batch": 1, "context": 128, "model": "dense-8b", "draft": "dense-8b", "devices": 1}
    if (prefix, field) == ("draft", "total_params_b"):
        value = 12.0
    if field == "experts_per_token" or field == "experts":
        base[prefix] = "mixtral-8x7b"
    if field in ("link_gb_s", "links", "hidden"):  # what the all-reduces carry between devices
        base["devices"] = 2
    if field == "fp8_tflops":  # the rate FP8 weights multiply at, where the verification is compute-bound
        base.update(weights="fp8", batch=256)
    params = {**base, f"{prefix}_{field}": value}
    plain = client.get(f"{REGIMES}/speedup-vs-batch", params=base).json()
    response = client.get(f"{REGIMES}/speedup-vs-batch", params=params)
    assert response.status_code == 200, response.text
    edited = response.json()
    assert edited["setup"][owner][field] == value
    watched = ("draft_cost", "verification_cost", "fits", "max_batch_that_fits")
    changed = any(plain[name] != edited[name] for name in watched)
    assert changed, f"{prefix}_{field} changed nothing"
    for endpoint in ("schedule", "verification-cost", "table"):
        extra = {"regime": "roofline"} if endpoint == "verification-cost" else {}
        if endpoint == "table":
            extra = {"regime_a": "roofline"}
        # Each endpoint takes only its own parameters: an unknown one is refused (422 naming it).
        dropped = {"schedule": ("k", "batch"), "table": ("batch",)}.get(endpoint, ())
        kept = {name: item for name, item in params.items() if name not in dropped}
        echoed = client.get(f"{REGIMES}/{endpoint}", params={**kept, **extra}).json()
        assert echoed["setup"][owner][field] == value


@pytest.mark.parametrize(
    ("path", "params", "name", "fragment"),
    [
        ("speedup-vs-batch", {"p": 1.5}, "p", "from 0 to 1"),
        ("speedup-vs-batch", {"p": "nan"}, "p", "finite"),
        ("speedup-vs-batch", {"k": -1}, "k", "from 0 to 64"),
        ("speedup-vs-batch", {"batch": 0}, "batch", "from 1 to 1024"),
        ("speedup-vs-batch", {"batch_max": 5000}, "batch_max", "from 1 to 1024"),
        ("speedup-vs-batch", {"batch": 600, "batch_max": 500}, "batch", "at most batch_max"),
        ("speedup-vs-batch", {"points": 1}, "points", "from 2 to 1024"),
        ("speedup-vs-batch", {"hw": "tpu"}, "hw", "one of a100-80gb-sxm"),
        ("speedup-vs-batch", {"model": "gpt-5"}, "model", "one of"),
        ("speedup-vs-batch", {"draft": ""}, "draft", "one of"),
        ("speedup-vs-batch", {"weights": "fp4"}, "weights", "bf16, fp8, int4"),
        ("speedup-vs-batch", {"draft_weights": "fp64"}, "draft_weights", "one of"),
        ("speedup-vs-batch", {"kv_cache": "int4"}, "kv_cache", "one of"),
        ("speedup-vs-batch", {"devices": 65}, "devices", "from 0 to 64"),
        ("speedup-vs-batch", {"context": -1}, "context", "from 0 to"),
        ("speedup-vs-batch", {"bandwidth_efficiency": 0}, "bandwidth_efficiency", "from 0.01 to 1"),
        ("speedup-vs-batch", {"compute_efficiency": 1.5}, "compute_efficiency", "from 0.01 to 1"),
        ("speedup-vs-batch", {"overhead_us": "inf"}, "overhead_us", "finite"),
        ("speedup-vs-batch", {"hw_bandwidth_tb_s": 0}, "hw_bandwidth_tb_s", "from 0.001 to 1000"),
        ("speedup-vs-batch", {"hw_bf16_tflops": "1e400"}, "hw_bf16_tflops", "finite"),
        ("speedup-vs-batch", {"hw_memory_gb": -5}, "hw_memory_gb", "from 0.001 to"),
        ("speedup-vs-batch", {"model_total_params_b": 5e-324}, "model_total_params_b", "from 1e-06 to 100000"),
        ("speedup-vs-batch", {"model_layers": 0}, "model_layers", "from 1 to"),
        ("speedup-vs-batch", {"model_layers": 2.5}, "model_layers", "from 1 to"),
        ("speedup-vs-batch", {"model_kv_tensors": 3}, "model_kv_tensors", "from 1 to 2"),
        ("speedup-vs-batch", {"draft_head_dim": "wide"}, "draft_head_dim", "from 1 to"),
        ("speedup-vs-batch", {"model_active_params_b": 100}, "model_active_params_b", "must not exceed total_params_b"),
        ("speedup-vs-batch", {"draft_experts_per_token": 2}, "draft_experts_per_token", "must not exceed experts"),
        (
            "speedup-vs-batch",
            {"model": "mixtral-8x7b", "model_experts_per_token": 4},
            "model_experts_per_token",
            "must be at least total_params_b * experts_per_token / experts (23.35)",
        ),
        ("schedule", {"k_max": 0}, "k_max", "from 1 to 64"),
        ("schedule", {"format": "xml"}, "format", "json or csv"),
        ("table", {"regime_a": "turbo"}, "regime_a", "memory-bound, compute-bound, linear, roofline"),
        ("table", {"regime_b": "free"}, "regime_b", "one of"),
        ("table", {"beta_a": 2}, "beta_a", "from 0 to 1"),
        ("table", {"batch_b": 2048}, "batch_b", "from 1 to 1024"),
        ("table", {"p_min": 0.9, "p_max": 0.1}, "p_max", "at least p_min"),
        ("table", {"p_step": 0.001}, "p_step", "at most 101"),
        ("table", {"p_step": 0}, "p_step", "0.001"),
        ("table", {"k_max": 33}, "k_max", "from 1 to 32"),
        ("table", {"c": -0.1}, "c", "from 0 to 10"),
        ("verification-cost", {"regime": "cheap"}, "regime", "one of"),
        ("verification-cost", {"k": 100}, "k", "from 0 to 64"),
    ],
)
def test_bad_inputs_get_422_naming_the_parameter(
    client: TestClient, path: str, params: dict[str, object], name: str, fragment: str
) -> None:
    response = client.get(f"{REGIMES}/{path}", params=params)
    assert response.status_code == 422, response.text
    details = response.json()["detail"]
    assert any(item["loc"][-1] == name and name in item["msg"] and fragment in item["msg"] for item in details), details


def test_unknown_parameters_do_not_break_things(client: TestClient) -> None:
    # Refused with a 422 that names the parameter and the nearest known one, never a 500 nor a silent default.
    response = client.get(f"{REGIMES}/table", params={"model_wings": 2})
    assert response.status_code == 422
    assert response.json()["detail"][0]["msg"] == "`model_wings`: unknown parameter; did you mean `model_hidden`?"


def test_openapi_lists_choices_and_caps(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    parameters = {item["name"]: item for item in schema["paths"]["/api/v1/regimes/schedule"]["get"]["parameters"]}
    assert parameters["hw"]["schema"]["enum"] == list(ACCELERATORS)
    assert parameters["model"]["schema"]["enum"] == list(MODELS)
    for prefix, fields in (("hw", ACCELERATOR_FIELDS), ("model", MODEL_FIELDS), ("draft", MODEL_FIELDS)):
        for field in fields:
            assert f"{prefix}_{field}" in parameters
    assert "1024" in parameters["batch_max"]["description"]
    assert "text/csv" in schema["paths"]["/api/v1/regimes/table"]["get"]["responses"]["200"]["content"]


def test_table_marks_both_regimes_at_the_pages_p_and_k(client: TestClient) -> None:
    body = client.get(f"{REGIMES}/table", params={"p": 0.73, "k": 11, "regime_b": "linear", "beta_b": 0.2}).json()
    marked = body["marked"]
    assert (marked["p"], marked["k"]) == (0.73, 11)
    assert marked["speedup_a"] == pytest.approx(cf.speedup(0.73, 11, 0.15))
    assert marked["speedup_b"] == pytest.approx(cf.speedup(0.73, 11, 0.15, lambda k: 1 + 0.2 * k))


@pytest.mark.parametrize(
    ("value", "string", "fixed2"),
    [
        (80.0, "80", "80.00"),
        (3.35, "3.35", "3.35"),
        (0.125, "0.125", "0.13"),  # toFixed rounds the exact binary value, ties away from zero
        (1.125, "1.125", "1.13"),  # the default table's speedup at p = 0.5, k = 5
        (1e-6, "0.000001", "0.00"),
        (1.5e-7, "1.5e-7", "0.00"),
        (1.2345678901234568e20, "123456789012345680000", "123456789012345683968.00"),
        (1e21, "1e+21", "1e+21"),
        (-0.001, "-0.001", "-0.00"),
    ],
)
def test_numbers_are_written_as_javascript_writes_them(value: float, string: str, fixed2: str) -> None:
    assert float(string) == value
    if value < 1e21:
        assert fixed(value, 2) == fixed2


@pytest.mark.parametrize("path", ["/speedup-vs-batch", "/schedule"])
def test_the_batch_predictions_say_where_they_come_from_and_how_far_off(client: TestClient, path: str) -> None:
    from app.model.cost import published

    defaults = client.get(REGIMES + path, params={"p": 0.8}).json()["accuracy"]
    assert defaults["source"] == "defaults"
    assert defaults["published_points"] >= 8 and 0 < defaults["median_error"] <= defaults["worst_error"]
    # the measured crossover is the published sweep's own: EAGLE on SGLang, one H100, stops paying from batch 24
    table = [point for point in published.load() if point.sweep == "eagle3_paper_tab3_sglang_h100_eagle"]
    paying = [point.batch for point in table if (point.speedup or 0) > 1]
    assert defaults["crossover_measured"] == 24 == min(b for b in (p.batch or 0 for p in table) if b > max(paying))
    # predicted from the other sources (leave-one-source-out), as the committed fit records it
    fit = published.published_fit()
    row = next(row for row in fit["crossovers"] if row["sweep"] == "eagle3_paper_tab3_sglang_h100_eagle")
    assert defaults["crossover_predicted"] == row["predicted"] and row["inside_range"]
    loso = fit["leave_one_source_out"]
    assert (defaults["median_error"], defaults["worst_error"]) == (loso["median_error"], loso["worst_error"])
    assert defaults["published_points"] == loso["points"] and defaults["published_sources"] == loso["sources"]
    own = published.accuracy_for(published.class_of_setup(fitting.setup_of(table[0], fitting.SpecCosts())))
    assert "each source predicted by terms fitted on the others" in defaults["summary"]
    assert defaults["setup_class"] == "draft-model drafts, any engine, NVIDIA Hopper, short context"
    assert own.setup_class == "head drafts, any engine, NVIDIA Hopper, short context" and own.class_points >= 3
    given = client.get(REGIMES + path, params={"p": 0.8, "bandwidth_efficiency": 0.5}).json()["accuracy"]
    assert given["source"] == "given" and "given here" in given["summary"]


def _measured_sweep_query(client: TestClient) -> tuple[str, dict[str, Any]]:
    """A sweep over batch and tokens per step on a server slower than the defaults, fitted by POST step-fit."""
    from tests.samples.step_times import slower_server_steps

    body = slower_server_steps()
    answer = client.post("/api/v1/step-fit?p=0.8", content=body, headers={"content-type": "text/plain"}).json()
    return answer["query"], answer


@pytest.mark.parametrize("path", ["/speedup-vs-batch", "/schedule"])
def test_a_measured_sweep_moves_the_answer_and_says_measured(client: TestClient, path: str) -> None:
    query, fit = _measured_sweep_query(client)
    assert fit["holdout_batches"] == 8 and 0 <= fit["holdout_error"] < 0.1
    assert f"fit_steps={fit['rows']}" in query and "fit_error=" in query and "allreduce_us=0" in query
    assert fit["accuracy"]["source"] == "measured" and fit["schedule"]["accuracy"]["source"] == "measured"
    defaults = client.get(f"{REGIMES}{path}?p=0.8&k=4").json()
    measured = client.get(f"{REGIMES}{path}?p=0.8&k=4&{query}").json()
    accuracy = measured["accuracy"]
    assert accuracy["source"] == "measured" and accuracy["measured_steps"] == fit["rows"] == 24
    assert accuracy["measured_error"] == pytest.approx(fit["holdout_error"], abs=5e-6)
    assert accuracy["summary"].startswith(
        f"measured: fitted to 24 steps, out-of-sample error {fit['holdout_error']:.0%}"
    )
    if path == "/speedup-vs-batch":  # the server whose arithmetic is slower stops paying at a smaller batch
        assert measured["crossover_batch"] < defaults["crossover_batch"]
        assert measured["setup"]["bandwidth_efficiency"] == pytest.approx(fit["bandwidth_efficiency"], rel=1e-3)
    else:
        assert measured["off_from_batch"] != defaults["off_from_batch"]
    # the terms without the fit's size and error are given, not measured; one of the two alone is refused by name
    terms = "&".join(pair for pair in query.split("&") if not pair.startswith("fit_"))
    assert client.get(f"{REGIMES}{path}?p=0.8&{terms}").json()["accuracy"]["source"] == "given"
    alone = client.get(f"{REGIMES}{path}?p=0.8&{terms}&fit_steps=24")
    assert alone.status_code == 422 and alone.json()["detail"][0]["loc"] == ["query", "fit_error"]
    assert "Out-of-sample error of the fit (%)" in alone.json()["detail"][0]["msg"]
    bad = client.get(f"{REGIMES}{path}?p=0.8&fit_steps=0&fit_error=5")
    assert bad.status_code == 422 and "fit_steps must be an integer from 1 to 5000" in bad.json()["detail"][0]["msg"]


def test_a_head_on_the_target_is_a_draft_priced_from_the_targets_shape(client: TestClient) -> None:
    from app.model.cost.presets import draft_head

    for target in ("dense-8b", "dense-70b"):
        # the plain roofline prices what each reads (an all-reduce per layer would favour the one-layer head)
        base = {"p": 0.8, "model": target, **PLAIN_ROOFLINE}
        body = client.get(REGIMES + "/speedup-vs-batch", params={**base, "draft": "eagle3"}).json()
        head = draft_head(MODELS[target], "eagle3", target)
        draft = body["setup"]["draft"]
        assert draft["key"] == "eagle3" and draft["name"].startswith("EAGLE-3 head of " + MODELS[target].name)
        assert draft["layers"] == 1 and draft["active_params_b"] == pytest.approx(head.active_params_b)
        # on an 8B target the head reads a third of a 1B draft's weights; on a 70B target one of its layers
        # alone is 0.88B, so the head reads more than the 1B draft
        one_b = client.get(REGIMES + "/speedup-vs-batch", params=base).json()
        cheaper = body["current"]["draft_cost"] < one_b["current"]["draft_cost"]
        assert cheaper is (target == "dense-8b")
    edited = client.get(REGIMES + "/speedup-vs-batch", params={"draft": "eagle", "draft_layers": 2}).json()
    assert edited["setup"]["draft"]["layers"] == 2
    refused = client.get(REGIMES + "/speedup-vs-batch", params={"draft": "medusa"})
    assert refused.status_code in (400, 422) and "eagle3" in refused.text


def test_the_cost_terms_are_inputs_named_in_the_answer(client: TestClient) -> None:
    params = {"p": 0.8, "k": 3, "model": "dense-8b", "draft": "eagle3"}
    plain = client.get(REGIMES + "/speedup-vs-batch", params=params).json()
    fitted = published.published_fit()["terms"]  # the defaults
    assert plain["setup"]["cycle_overhead_us"] == fitted["cycle_overhead_us"]
    assert plain["setup"]["overhead_per_draft_step_us"] == fitted["overhead_per_draft_step_us"]
    assert plain["setup"]["draft_step_overhead_us"] == fitted["overhead_per_draft_step_us"]
    terms = {"cycle_overhead_us": 5000.0, "cycle_overhead_per_sequence_us": 200.0, "overhead_per_draft_step_us": 50.0}
    slower = client.get(REGIMES + "/speedup-vs-batch", params={**params, **terms}).json()
    assert {name: slower["setup"][name] for name in terms} == terms
    assert slower["accuracy"]["source"] == "given"
    assert slower["current"]["speedup"] < plain["current"]["speedup"]
    assert slower["crossover_batch"] is not None
    assert plain["crossover_batch"] is None or slower["crossover_batch"] < plain["crossover_batch"]
    for name, value in (("cycle_overhead_us", -1), ("allreduce_us", 1e9)):
        refused = client.get(REGIMES + "/speedup-vs-batch", params={name: value})
        assert refused.status_code == 422 and name in refused.text


def test_the_fitted_terms_are_the_defaults_and_stop_speculation_at_smaller_batches(client: TestClient) -> None:
    params = {"p": 0.7, "k": 3, "draft": "eagle"}
    shipped = client.get(REGIMES + "/speedup-vs-batch", params=params).json()
    terms = shipped["accuracy"]["fitted_terms"]
    assert set(terms) >= {"bandwidth_efficiency", "overhead_us", "cycle_overhead_per_sequence_us", "allreduce_us"}
    assert shipped["accuracy"]["fitted_points"] >= 8 and shipped["accuracy"]["fitted_median_error"] < 0.5
    fitted = client.get(REGIMES + "/speedup-vs-batch", params={**params, **terms}).json()
    assert fitted == shipped and fitted["accuracy"]["source"] == "defaults"
    plain = client.get(REGIMES + "/speedup-vs-batch", params={**params, **PLAIN_ROOFLINE}).json()
    assert plain["accuracy"]["source"] == "given"
    assert fitted["crossover_batch"] is not None
    assert plain["crossover_batch"] is None or fitted["crossover_batch"] < plain["crossover_batch"] / 2


def test_the_defaults_stop_paying_near_the_published_eagle_sweep_on_one_h100(client: TestClient) -> None:
    """The EAGLE-3 paper's Table 3: EAGLE on SGLang, Llama-3.1-8B on one H100, k = 3, 1.40x at batch 2 and no
    more gain from batch 24.  Given the acceptance that makes batch 2 come out at 1.40x, /speedup-vs-batch
    with its default terms stops paying at a batch whose stated interval holds batch 24 (the plain roofline said
    384)."""
    params = {"hw": "h100-sxm", "model": "dense-8b", "draft": "eagle", "k": 3, "batch": 2, "devices": 1}
    probe_p = 0.5
    probe = client.get(REGIMES + "/speedup-vs-batch", params={**params, "p": probe_p}).json()
    tokens = 1.40 * cf.expected_tokens(probe_p, 3) / probe["current"]["speedup"]
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if cf.expected_tokens(middle, 3) < tokens else (low, middle)
    p = low
    body = client.get(REGIMES + "/speedup-vs-batch", params={**params, "p": p}).json()
    assert body["current"]["speedup"] == pytest.approx(1.40, rel=1e-6)
    assert body["crossover_batch"] is not None and 24 < body["crossover_batch"] <= 4 * 24
    first, last = body["crossover_range_low"], body["crossover_range_high"]
    assert first is not None and first <= 24 and (last is None or last >= body["crossover_batch"])
    assert body["accuracy"]["setup_class"] == "head drafts, any engine, NVIDIA Hopper, short context"
    plain = client.get(REGIMES + "/speedup-vs-batch", params={**params, "p": p, **PLAIN_ROOFLINE}).json()
    assert plain["crossover_batch"] is None or plain["crossover_batch"] > 4 * 24


# A mixture of experts at a long context whose speedup dips and rises again with the batch: 4 x RTX PRO 6000,
# Qwen3.5-397B-A17B in 4-bit weights with its MTP head, 65,536 tokens of context.
RISING = {
    "p": 0.8,
    "k_max": 8,
    "batch_max": 128,
    "hw": "rtx-pro-6000-blackwell",
    "devices": 4,
    "model": "qwen3.5-397b-a17b",
    "weights": "int4",
    "draft": "mtp",
    "context": 65536,
}


def test_where_the_speedup_rises_again_the_range_is_where_it_may_not_pay(client: TestClient) -> None:
    """Past the off range the interval of a rising speedup lies above 1: the schedule says it pays there, in the
    JSON (off_range_pays_past, crossover_range_pays_past) and in words, not that it stops paying in the range."""
    body = client.get(f"{REGIMES}/schedule", params=RISING).json()
    spread = body["accuracy"]["interval_spread"]
    low, high = body["off_range_low"], body["off_range_high"]
    assert low is not None and high is not None and high < body["batch_limit"], body
    assert body["off_range_pays_past"] is True and body["off_from_batch"] is None
    past = next(step for step in body["steps"] if step["batch_from"] <= high + 1 <= step["batch_to"])
    sweep = client.get(f"{REGIMES}/speedup-vs-batch", params={**RISING, "k": past["k"], "batch": high + 1}).json()
    assert sweep["current"]["speedup"] / (1 + spread) > 1.0
    end = sweep["crossover_range_high"]
    assert end is not None, sweep  # this k's own range ends too, and the chart's curve is drawn just past it
    after = sweep["speedup"][sweep["batches"].index(end + 1)]
    assert sweep["crossover_range_pays_past"] is (after > 1.0) is True
    falling = client.get(f"{REGIMES}/schedule", params={"p": 0.4, "k_max": 8, "context": 0, "hw": "rtx-3090"}).json()
    assert falling["off_range_high"] is not None and falling["off_range_pays_past"] is False


def test_hardware_nobody_has_measured_gets_the_same_terms_and_is_told_so(client: TestClient) -> None:
    """An accelerator with no published point of the request's class (every preset now has some published point,
    but not of every class) is answered with the same terms and told so."""
    measured = {point.accelerator for point in published.load() if point.priced}
    h100 = client.get(REGIMES + "/speedup-vs-batch", params={"hw": "h100-sxm"}).json()
    answers = (client.get(REGIMES + "/speedup-vs-batch", params={"hw": key}).json() for key in ACCELERATORS)
    other = next((body for body in answers if body["accuracy"]["class_points"] == 0), None)
    assert other is not None, "every preset's default request now has published points of its class"
    assert "h100-sxm" in measured and "NVIDIA Hopper" in h100["accuracy"]["setup_class"]
    assert "no published measurement of this class" in other["accuracy"]["summary"]
    assert other["accuracy"]["class_points"] == 0 and other["accuracy"]["interval_from"] == "every published point"
    assert other["accuracy"]["source"] == "defaults"
    assert other["setup"]["bandwidth_efficiency"] == h100["setup"]["bandwidth_efficiency"]


# ---------------------------------------------------------------------------
# The acceptance as p, a mean acceptance length or a draft acceptance rate at k, or a measured profile


def _p_of_mean_length(length: float, k: int) -> float:
    """p with 1 + p + ... + p^k = length, by bisection on the sum written out here."""
    low, high = 0.0, 1.0
    for _ in range(200):
        middle = (low + high) / 2
        if sum(middle**i for i in range(k + 1)) < length:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _p_of_draft_rate(rate: float, k: int) -> float:
    """p with (p + ... + p^k) / k = rate (accepted over drafted, as an engine reports it)."""
    low, high = 0.0, 1.0
    for _ in range(200):
        middle = (low + high) / 2
        if sum(middle**i for i in range(1, k + 1)) / k < rate:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@pytest.mark.parametrize(("given", "k"), [({"mean_length": 3.2}, 4), ({"mean_length": 1.9}, 2), ({"rate": 0.55}, 5)])
def test_a_mean_length_or_rate_at_k_answers_as_the_p_it_converts_to(
    client: TestClient, given: dict[str, float], k: int
) -> None:
    expected = (
        _p_of_mean_length(given["mean_length"], k) if "mean_length" in given else _p_of_draft_rate(given["rate"], k)
    )
    common = {"context": 0, "k_max": 12}
    sweep = client.get(f"{REGIMES}/speedup-vs-batch", params={**common, **given, "k": k}).json()
    assert sweep["p"] == pytest.approx(expected, abs=1e-9)
    assert sweep["expected_tokens"] == pytest.approx(cf.expected_tokens(expected, k), abs=1e-8)
    as_p = client.get(f"{REGIMES}/speedup-vs-batch", params={**common, "p": sweep["p"], "k": k}).json()
    assert sweep == as_p
    near = client.get(f"{REGIMES}/speedup-vs-batch", params={**common, "p": expected, "k": k}).json()
    assert np.allclose(sweep["speedup"], near["speedup"], rtol=1e-8) and sweep["best_k"] == near["best_k"]
    schedule = client.get(f"{REGIMES}/schedule", params={**common, **given, "k": k}).json()
    assert schedule["p"] == pytest.approx(expected, abs=1e-9)
    assert schedule == client.get(f"{REGIMES}/schedule", params={**common, "p": schedule["p"]}).json()
    assert schedule["steps"][0]["k"] == sweep["best_k"][0]


def test_a_profile_prices_the_sweep_and_the_schedule_as_the_plan_does(client: TestClient) -> None:
    shares = (0.9, 0.8, 0.7)
    profile = ",".join(str(share) for share in shares)
    common = {"p": 0.5, "context": 0, "k_max": 12}
    plain = client.get(f"{REGIMES}/speedup-vs-batch", params={**common, "k": 3}).json()
    measured = client.get(f"{REGIMES}/speedup-vs-batch", params={**common, "k": 3, "profile": profile}).json()
    tokens = 1 + sum(shares)  # tokens per verification at k = 3 from the profile alone
    assert measured["p"] == plain["p"] == 0.5
    assert measured["expected_tokens"] == pytest.approx(tokens)
    assert plain["expected_tokens"] == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    # the same costs per batch: the speedup scales with the tokens per verification
    plain_at = dict(zip(plain["batches"], plain["speedup"], strict=True))
    common_batches = [batch for batch in measured["batches"] if batch in plain_at]
    assert len(common_batches) > 50
    ratio = [measured["speedup"][measured["batches"].index(b)] / plain_at[b] for b in common_batches]
    assert np.allclose(ratio, tokens / plain["expected_tokens"], rtol=1e-12)
    assert (
        measured["crossover_batch"] is None
        or plain["crossover_batch"] is None
        or (measured["crossover_batch"] >= plain["crossover_batch"])
    )
    assert measured["best_speedup"][0] > plain["best_speedup"][0]
    # the schedule and the plan (engine-config) read the profile the same way; the sweep's best k agrees
    schedule = client.get(f"{REGIMES}/schedule", params={**common, "profile": profile}).json()
    assert schedule != client.get(f"{REGIMES}/schedule", params=common).json()
    plan = client.get("/api/v1/engine-config", params={**common, "engine": "vllm", "profile": profile}).json()
    assert plan["schedule"]["steps"] == schedule["steps"]
    assert schedule["steps"][0]["k"] == measured["best_k"][0]


@pytest.mark.parametrize(
    ("path", "params", "name", "fragment"),
    [
        ("speedup-vs-batch", {"p": 0.8, "mean_length": 3.0}, "p", "exactly one of p, rate"),
        ("speedup-vs-batch", {"rate": 0.5, "mean_length": 3.0}, "p", "exactly one of p, rate"),
        ("speedup-vs-batch", {"mean_length": 6.0, "k": 4}, "mean_length", "at most k + 1 = 5"),
        ("speedup-vs-batch", {"mean_length": 0.5}, "mean_length", "from 1 to"),
        ("speedup-vs-batch", {"rate": 0.5, "k": 0}, "k", "at least 1"),
        ("speedup-vs-batch", {"rate": 1.5}, "rate", "from 0 to 1"),
        ("speedup-vs-batch", {"profile": "0.5,0.9"}, "profile", "cannot grow"),
        ("speedup-vs-batch", {"profile": "x"}, "profile", "got 'x'"),
        ("schedule", {"mean_length": 3.0}, "k", "required with mean_length"),
        ("schedule", {"rate": 0.5}, "k", "required with rate"),
        ("schedule", {"p": 0.7, "rate": 0.5, "k": 4}, "p", "exactly one of p, rate"),
        ("schedule", {"mean_length": 9.0, "k": 4}, "mean_length", "at most k + 1 = 5"),
        ("schedule", {"mean_length": 3.0, "k": 0}, "k", "from 1 to"),
        ("schedule", {"profile": "1.2"}, "profile", "from 0 to 1"),
    ],
)
def test_bad_acceptance_combinations_get_a_422_naming_the_parameter(
    client: TestClient, path: str, params: dict[str, object], name: str, fragment: str
) -> None:
    response = client.get(f"{REGIMES}/{path}", params=params)
    assert response.status_code == 422, response.text
    details = response.json()["detail"]
    assert any(item["loc"][-1] == name and name in item["msg"] and fragment in item["msg"] for item in details), details


def test_openapi_announces_the_acceptance_inputs_of_both_predictions(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/api/v1/regimes/speedup-vs-batch", "/api/v1/regimes/schedule"):
        operation = paths[path]["get"]
        parameters = {item["name"]: item for item in operation["parameters"]}
        assert {"p", "rate", "mean_length", "k", "profile"} <= set(parameters)
        assert "give at most one of them" in operation["description"] and "mean_length" in operation["description"]
        length = parameters["mean_length"]["schema"]["anyOf"][0]
        assert length["minimum"] == 1 and length["maximum"] == 65


def test_the_schedule_states_where_stopping_is_within_the_error(client: TestClient) -> None:
    """The off range is where the best speculating speedup's interval (the stated error) holds 1; it contains the
    batch the schedule turns speculation off at, and none is stated for terms the user gave.  With the default
    setup's interval (every published point's worst error) it holds 1 to the largest batch; on a class with a
    narrower one (EAGLE-3 on an RTX 3090, p = 0.4) it ends."""
    for setup, ends in (({}, False), ({"p": 0.4, "hw": "rtx-3090", "draft": "eagle3"}, True)):
        params = {"p": 0.8, "k_max": 8, "context": 0, **setup}
        body = client.get(f"{REGIMES}/schedule", params=params).json()
        spread = body["accuracy"]["interval_spread"]
        low, high, off = body["off_range_low"], body["off_range_high"], body["off_from_batch"]
        assert spread > 0 and low is not None and low <= off and (high is None or off <= high)
        assert (high is not None) == ends, body
        largest = high + 1 if high is not None else body["batch_limit"]
        best: dict[int, float] = {}
        for k in range(1, 9):  # the best speculating speedup, from each k's own sweep
            sweep = client.get(f"{REGIMES}/speedup-vs-batch", params={**params, "k": k, "batch": largest}).json()
            for batch, value in zip(sweep["batches"], sweep["speedup"], strict=True):
                best[batch] = max(best.get(batch, 0.0), value)
        if high is None:
            assert best[largest] * (1 + spread) >= 1.0  # the interval still holds 1 at the largest batch
        else:
            assert best[high] * (1 + spread) >= 1.0 > best[high + 1] * (1 + spread)
    given = client.get(
        f"{REGIMES}/schedule", params={"p": 0.8, "k_max": 8, "context": 0, "cycle_overhead_per_sequence_us": 150}
    ).json()
    assert given["accuracy"]["source"] != "defaults" and given["off_range_low"] is None
