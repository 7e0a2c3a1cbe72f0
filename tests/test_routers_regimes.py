from __future__ import annotations

import csv
import io
import itertools
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.datastructures import QueryParams

from app.model import closed_form as cf
from app.model.presets import ACCELERATOR_FIELDS, ACCELERATORS, MODEL_FIELDS, MODELS
from app.model.regimes import default_setup, roofline_draft_cost, roofline_speedup, roofline_verification
from app.web.api.routes.regimes import PAGE_SWEEP_K_MAX, PAGE_TABLE_K_MAX, page_context, parse_page_state
from app.web.pages.page_format import js_fixed, js_string

REGIMES = "/api/v1/regimes"


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
    dense = client.get(f"{REGIMES}/verification-cost", params={"regime": "roofline", "batch": 1}).json()
    assert all(point["verification_cost"] == 1.0 for point in dense["points"])
    assert dense["draft_cost"] == pytest.approx(float(roofline_draft_cost(default_setup(), 1)))
    assert dense["points"][4]["compute_bound"] is False and dense["points"][4]["step_ms"] > 0
    moe = client.get(
        f"{REGIMES}/verification-cost", params={"regime": "roofline", "batch": 1, "model": "mixtral-8x7b"}
    ).json()
    costs = [point["verification_cost"] for point in moe["points"]]
    assert costs[0] == 1.0 and all(b > a for a, b in itertools.pairwise(costs))
    busy = client.get(f"{REGIMES}/verification-cost", params={"regime": "roofline", "batch": 1024}).json()
    assert busy["points"][8]["compute_bound"] is True
    verify = roofline_verification(default_setup(), 1024)
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
    crossovers = [
        client.get(f"{REGIMES}/speedup-vs-batch", params={"k": k, "model": "dense-70b", "devices": 8}).json()[
            "crossover_batch"
        ]
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
ACCELERATOR_EDITS = {"bandwidth_tb_s": 4.2, "bf16_tflops": 700.0, "memory_gb": 40.0}
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
}


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
        echoed = client.get(f"{REGIMES}/{endpoint}", params={**params, **extra}).json()
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
    assert client.get(f"{REGIMES}/table", params={"model_wings": 2}).status_code == 200


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


# ---------------------------------------------------------------------------
# First paint of the page section: page_context from the rg_* keys of the page URL


# Every API parameter the page sends, at the values the script sends for an empty URL.
PAGE_DEFAULTS: dict[str, object] = {
    "hw": "h100-sxm",
    "model": "dense-8b",
    "draft": "dense-1b",
    "weights": "bf16",
    "kv_cache": "bf16",
    "devices": 0,
    "context": 1024,
    "bandwidth_efficiency": 0.8,
    "compute_efficiency": 0.6,
    "overhead_us": 50,
}
TABLE_DEFAULTS: dict[str, object] = {
    "regime_a": "memory-bound",
    "regime_b": "compute-bound",
    "beta_a": 0.5,
    "beta_b": 0.5,
    "batch_a": 1,
    "batch_b": 256,
    "c": 0.15,
}


def api_bodies(
    client: TestClient, setup: dict[str, object], table: dict[str, object], p: float, k: int, batch: int
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """What the script fetches for this state: the sweep, the schedule and the table."""
    sweep = client.get(
        f"{REGIMES}/speedup-vs-batch", params={**setup, "p": p, "k": k, "batch": batch, "k_max": PAGE_SWEEP_K_MAX}
    )
    schedule = client.get(f"{REGIMES}/schedule", params={**setup, "p": p, "k_max": PAGE_TABLE_K_MAX})
    grid = client.get(f"{REGIMES}/table", params={**setup, **table, "p": p, "k": k, "k_max": PAGE_TABLE_K_MAX})
    assert sweep.status_code == schedule.status_code == grid.status_code == 200
    return sweep.json(), schedule.json(), grid.json()


def assert_context_matches_api(
    context: dict[str, Any], sweep: dict[str, Any], schedule: dict[str, Any], grid: dict[str, Any]
) -> None:
    """The first paint shows the API's numbers, written as static/js/regimes.js writes them (toFixed: js_fixed)."""
    readouts, point = context["readouts"], sweep["current"]
    assert readouts["speedup"] == f"{js_fixed(point['speedup'], 2)}×"
    best = f"{point['best_k']} ({js_fixed(point['best_speedup'], 2)}×)" if point["best_k"] else "off"
    assert readouts["best-k"] == best
    for key, name in (("crossover", "crossover_batch"), ("best-crossover", "best_crossover_batch")):
        assert readouts[key] == (f"pays to {sweep['batch_max']}" if sweep[name] is None else str(sweep[name]))
    assert readouts["draft-cost"] == f"{js_fixed(point['draft_cost'], 2)}"
    assert readouts["verify-cost"] == f"{js_fixed(point['verification_cost'], 2)}"
    assert (
        readouts["step"]
        == f"{js_fixed(point['target_step_ms'], 2)} ms plain, {js_fixed(point['verify_step_ms'], 2)} ms verifying"
    )
    assert readouts["bound"] == ("compute-bound" if point["verify_compute_bound"] else "memory-bound")
    assert readouts["memory"].startswith(
        f"{js_fixed(point['memory_needed_gb'], 1)} / {js_fixed(sweep['setup']['memory_capacity_gb'], 0)} GB"
    )
    assert readouts["memory"].endswith("(does not fit)") != point["fits"]
    assert readouts["devices-used"].startswith(f"{sweep['setup']['devices']} × {sweep['setup']['accelerator']['name']}")
    assert (readouts["p-value"], readouts["k-value"], readouts["batch-value"]) == (
        f"{js_fixed(sweep['p'], 2)}",
        str(sweep["k"]),
        str(sweep["batch"]),
    )
    assert context["devices_placeholder"] == str(sweep["setup"]["devices"])
    rows = context["schedule"]
    assert [row.k for row in rows] == [str(step["k"]) if step["k"] else "off" for step in schedule["steps"]]
    assert [row.batches.split("–")[0] for row in rows] == [str(step["batch_from"]) for step in schedule["steps"]]
    assert [row.speedup for row in rows] == [
        f"{js_fixed(step['speedup_at_from'], 2)}× → {js_fixed(step['speedup_at_to'], 2)}×" for step in schedule["steps"]
    ]
    for side in ("a", "b"):
        table, regime = context["tables"][side], grid[f"regime_{side}"]
        assert table.caption == f"{regime['label']}, c = {js_fixed(regime['draft_cost'], 3)}"
        assert table.k_values == grid["k_values"]
        assert [row.p for row in table.rows] == [f"{js_fixed(p, 2)}" for p in grid["p_values"]]
        texts = [[cell.text for cell in row.cells] for row in table.rows]
        assert texts == [[f"{js_fixed(value, 2)}" for value in row] for row in grid[f"speedup_{side}"]]
        classes = [cell.css_class.split() for row in table.rows for cell in row.cells]
        values = [value for row in grid[f"speedup_{side}"] for value in row]
        assert all(("rg-win" in found) == (value > 1) for found, value in zip(classes, values, strict=True))
        assert all(("rg-loss" in found) == (value < 1) for found, value in zip(classes, values, strict=True))
    highlighted = sum(
        "rg-highlight" in cell.css_class for t in context["tables"].values() for r in t.rows for cell in r.cells
    )
    assert highlighted == (2 if grid["highlight"] else 0)
    if grid["highlight"]:
        assert context["summary"].startswith(
            f"At p = {js_fixed(grid['highlight']['p'], 2)}, k = {grid['highlight']['k']}:"
        )
        assert f"{grid['win_to_loss_cells']} cells flip" in context["summary"]


def test_page_context_defaults_match_the_api(client: TestClient) -> None:
    context = page_context({})
    assert_context_matches_api(context, *api_bodies(client, PAGE_DEFAULTS, TABLE_DEFAULTS, 0.8, 4, 1))
    assert {name: choice["value"] for name, choice in context["choices"].items()} == {
        **{name: value for name, value in PAGE_DEFAULTS.items() if isinstance(value, str)},
        "regime_a": "memory-bound",
        "regime_b": "compute-bound",
    }
    assert [value for value, _ in context["choices"]["hw"]["options"]] == list(ACCELERATORS)
    assert context["choices"]["weights"]["options"][2] == ("int4", "int4 (0.5 B)")
    assert context["numbers"] == {
        name: js_string(float(value))
        for name, value in {**PAGE_DEFAULTS, **TABLE_DEFAULTS}.items()
        if not isinstance(value, str)
    }
    assert (context["p"], context["k"], context["batch_position"]) == ("0.8", "4", "0")
    assert context["readouts"]["verify-cost"] == "1.00"  # batch one, dense: verification is free
    assert context["regime_inputs"] == {"a": {"beta": False, "batch": False}, "b": {"beta": False, "batch": False}}
    hw_fields = context["fields"]["hw"]
    assert not hw_fields["open"] and [field.value for field in hw_fields["inputs"]] == ["3.35", "989.4", "80"]
    assert not any(field.edited for group in context["fields"].values() for field in group["inputs"])
    assert len(context["tables"]["a"].rows) == 10 and len(context["tables"]["a"].rows[0].cells) == 8
    assert context["tables"]["a"].rows[0].cells[0].text == f"{cf.speedup(0.5, 1, 0.15):.2f}"


def test_page_context_reads_a_valid_url_state(client: TestClient) -> None:
    query = {
        "rg_hw": "b200",
        "rg_model": "mixtral-8x7b",
        "rg_draft": "dense-3b",
        "rg_weights": "fp8",
        "rg_kv_cache": "fp8",
        "rg_devices": "4",
        "rg_context": "4096",
        "rg_bandwidth_efficiency": "0.7",
        "rg_compute_efficiency": "0.5",
        "rg_overhead_us": "20",
        "rg_hw_memory_gb": "120",
        "rg_model_layers": "40",
        "rg_p": "0.7",
        "rg_k": "3",
        "rg_batch": "64",
        "rg_regime_a": "roofline",
        "rg_batch_a": "8",
        "rg_regime_b": "linear",
        "rg_beta_b": "0.25",
        "rg_c": "0.2",
        "k": "2",  # the demo's own key is not the section's
    }
    context = page_context(query)
    setup = {name: query[f"rg_{name}"] for name in PAGE_DEFAULTS} | {"hw_memory_gb": 120, "model_layers": 40}
    table = {name: query.get(f"rg_{name}", value) for name, value in TABLE_DEFAULTS.items()}
    sweep, schedule, grid = api_bodies(client, setup, table, 0.7, 3, 64)
    assert_context_matches_api(context, sweep, schedule, grid)
    assert sweep["current"]["verification_cost"] > 1.0  # MoE: four tokens read more experts than one
    assert {name: choice["value"] for name, choice in context["choices"].items()} == {
        "hw": "b200",
        "model": "mixtral-8x7b",
        "draft": "dense-3b",
        "weights": "fp8",
        "kv_cache": "fp8",
        "regime_a": "roofline",
        "regime_b": "linear",
    }
    assert context["numbers"]["devices"] == "4" and context["numbers"]["beta_b"] == "0.25"
    assert (context["p"], context["k"], context["batch_position"]) == ("0.7", "3", "60")
    assert context["regime_inputs"] == {"a": {"beta": False, "batch": True}, "b": {"beta": True, "batch": False}}
    memory = next(field for field in context["fields"]["hw"]["inputs"] if field.name == "hw_memory_gb")
    assert (memory.value, memory.edited, context["fields"]["hw"]["open"]) == ("120", True, True)
    assert not context["fields"]["draft"]["open"]
    assert "hw_memory_gb=120" in context["links"]["schedule_csv"] and "format=csv" in context["links"]["schedule_csv"]
    linked = client.get(context["links"]["table_json"]).json()
    assert linked["speedup_a"] == grid["speedup_a"] and linked["regime_b"] == grid["regime_b"]
    assert client.get(context["links"]["schedule_json"]).json()["steps"] == schedule["steps"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"rg_batch": "100"}, 97),  # the slider's log steps: position round(10 log2 100) = 66 -> batch 97
        ({"rg_batch": "1024"}, 1024),
        ({"rg_batch": "1025"}, 1),
        ({"rg_batch": "2.5"}, 1),
        ({"rg_batch": "16.0"}, 16),
    ],
)
def test_batch_follows_the_sliders_log_steps(query: dict[str, str], expected: int) -> None:
    assert parse_page_state(query).batch == expected
    assert page_context(query)["readouts"]["batch-value"] == str(expected)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0.735", 0.74),
        ("0.7349", 0.73),
        ("1", 1.0),
        ("0", 0.0),
        (" .5 ", 0.5),
        ("1.01", 0.8),
        ("-0.1", 0.8),
        ("x", 0.8),
    ],
)
def test_p_snaps_to_the_sliders_step(raw: str, expected: float) -> None:
    assert parse_page_state({"rg_p": raw}).p == expected


# Values the page must survive: markup, out of range, not numbers, not finite, Python-only or JavaScript-only syntax.
HOSTILE_VALUES = [
    '"><script>alert(1)</script>',
    "<img src=x onerror=alert(1)>",
    "' onmouseover='alert(1)",
    "javascript:alert(1)",
    "nan",
    "NaN",
    "inf",
    "-Infinity",
    "1e999",
    "-1",
    "1e9",
    "1_0",
    "",
    " ",
    "٣",
    "\x00",
    "9" * 60,
    "h100-sxm ",
    "H100-SXM",
]


@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_hostile_values_fall_back_and_never_appear_raw(client: TestClient, value: str) -> None:
    keys = ["hw", "model", "draft", "weights", "kv_cache", "regime_a", "regime_b", "p", "k", "batch"]
    keys += list(PAGE_DEFAULTS) + list(TABLE_DEFAULTS) + ["hw_bandwidth_tb_s", "model_layers", "draft_experts"]
    query = {f"rg_{key}": value for key in keys}
    context = page_context(query)
    defaults = page_context({})
    assert context["readouts"] == defaults["readouts"]
    assert context["tables"] == defaults["tables"] and context["schedule"] == defaults["schedule"]
    response = client.get("/", params=query)
    assert response.status_code == 200
    section = response.text.split('<section id="regimes"', 1)[1].split("</section>", 1)[0]
    assert f'id="rg-speedup">{defaults["readouts"]["speedup"]}<' in section
    if set(value) & set("<>\"'():") or len(value) > 20:  # markup and long values; short ones occur in the page
        assert value not in section
    for payload in ("<script>", "<img", "onerror", "onmouseover", "javascript:"):
        assert payload not in section


@pytest.mark.parametrize("raw", ["0x5", " 5", "+5", "5.", "5.0"])
def test_sliders_read_numbers_as_javascript_and_inputs_as_html(raw: str) -> None:
    # Number() reads all of these as 5 for a slider; a number input keeps only valid HTML numbers ("5.0")
    state = parse_page_state({"rg_k": raw, "rg_batch": raw, "rg_context": raw, "rg_model_layers": raw})
    assert (state.k, state.batch) == (5, 5)
    kept = raw == "5.0"
    assert state.numbers["context"] == (5 if kept else 1024)
    assert state.overrides == ({"model_layers": 5} if kept else {})


def test_values_the_api_refuses_fall_back_one_by_one() -> None:
    # a rule between fields broken by one edit drops that edit only; the other edits stay
    query = {"rg_model": "mixtral-8x7b", "rg_model_experts_per_token": "4", "rg_model_layers": "40", "rg_devices": "65"}
    state = parse_page_state(query)
    context = page_context(query)
    assert state.overrides == {"model_experts_per_token": 4, "model_layers": 40} and state.numbers["devices"] == 0
    fields = {field.name: field for field in context["fields"]["model"]["inputs"]}
    assert (fields["model_experts_per_token"].value, fields["model_experts_per_token"].edited) == ("2", False)
    assert (fields["model_layers"].value, fields["model_layers"].edited) == ("40", True)
    assert context["choices"]["model"]["value"] == "mixtral-8x7b"
    # an edit equal to the preset is no edit; a float where the API wants an integer is refused
    same = parse_page_state({"rg_model_layers": "32.0", "rg_draft_layers": "2.5", "rg_context": "1e3"})
    assert same.overrides == {} and same.numbers["context"] == 1024
    # the first of repeated keys wins, as URLSearchParams.get
    assert parse_page_state(QueryParams("rg_hw=b200&rg_hw=mi300x")).choices["hw"] == "b200"


def test_page_context_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.web.api.routes import regimes as module

    real = module._page_context
    calls: list[object] = []

    def broken_once(state: object) -> dict[str, Any]:
        calls.append(state)
        if len(calls) == 1:
            raise FloatingPointError("overflow")
        return real(state)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "_page_context", broken_once)
    assert page_context({"rg_hw": "b200"})["readouts"] == real(module.DEFAULT_PAGE_STATE)["readouts"]
    monkeypatch.setattr(module, "_page_context", lambda state: 1 / 0)
    assert page_context({}) == {}


def test_page_renders_placeholders_without_a_first_paint(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.web.api.routes import regimes as module

    monkeypatch.setattr(module, "_page_context", lambda state: 1 / 0)
    body = client.get("/batch").text
    assert 'id="rg-speedup">–<' in body and '<select id="rg-hw" name="hw"></select>' in body
    assert "needs JavaScript" in body


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["rg_hw", "rg_model", "rg_p", "rg_k", "rg_batch", "rg_devices", "rg_context", "rg_c"])
        | st.sampled_from(["rg_model_total_params_b", "rg_model_active_params_b", "rg_model_experts"])
        | st.sampled_from(["rg_model_experts_per_token", "rg_hw_bandwidth_tb_s", "rg_overhead_us", "rg_batch_b"]),
        st.one_of(st.text(max_size=12), st.floats(allow_nan=True).map(str), st.integers(-5, 5000).map(str)),
        max_size=6,
    )
)
def test_page_context_survives_any_url_state(query: dict[str, str]) -> None:
    context = page_context(query)
    assert context["readouts"]["speedup"].endswith("×")
    assert len(context["tables"]["a"].rows) == 10


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
    assert (js_string(value), js_fixed(value, 2)) == (string, fixed2)
