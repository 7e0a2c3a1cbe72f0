"""The /batch view: the API's numbers as the page shows them, its controls read two ways, and its JSON twin."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from app.model import limits
from app.model.arithmetic import closed_form as cf
from app.model.cost.presets import ACCELERATORS, MODELS
from app.web.pages.controls import ControlError
from app.web.pages.text import fixed
from app.web.pages.views import batch
from app.web.pages.views.batch import BATCH_STEPS, K_SEARCH_MAX, PAGE, TABLE_K_MAX, batch_position

REGIMES = "/api/v1/regimes"
FITTED_TERMS: dict[str, float] = json.loads(limits.PUBLISHED_FIT.read_text())["terms"]
# Every setup parameter the page sends to the API for an address without state.
SETUP_DEFAULTS: dict[str, object] = {
    "hw": "h100-sxm",
    "model": "dense-8b",
    "draft": "dense-1b",
    "weights": "bf16",
    "kv_cache": "bf16",
    "devices": 0,
    "context": 1024,
    # the efficiencies and the overhead fitted to published measurements
    **{name: FITTED_TERMS[name] for name in ("bandwidth_efficiency", "compute_efficiency", "overhead_us")},
}


def _verification_at_batch_one_by_hand() -> str:
    """The defaults' v(k) at batch one, dense 8B on an H100: verifying k + 1 tokens costs what one pass does (the
    weights and one sequence's cache of 1,024 tokens read at the fitted share of 3.35 TB/s, plus the pass's
    overhead), and the cycle's own time on top."""
    model = MODELS["dense-8b"]
    cache = 1024 * model.layers * model.kv_heads * model.head_dim * 2 * 2
    pass_s = (model.total_params_b * 2e9 + cache) / (3.35e12 * FITTED_TERMS["bandwidth_efficiency"])
    pass_s += FITTED_TERMS["overhead_us"] * 1e-6
    cycle_s = (FITTED_TERMS["cycle_overhead_us"] + FITTED_TERMS["cycle_overhead_per_sequence_us"]) * 1e-6
    return f"{1 + cycle_s / pass_s:.2f}"


DEFAULT_VERIFICATION_AT_BATCH_ONE = _verification_at_batch_one_by_hand()
TABLE_DEFAULTS: dict[str, object] = {
    "regime_a": "memory-bound",
    "regime_b": "compute-bound",
    "beta_a": 0.5,
    "beta_b": 0.5,
    "batch_a": 1,
    "batch_b": 256,
    "c": 0.15,
}


def view(query: dict[str, str] | None = None, strict: bool = False) -> dict[str, Any]:
    return PAGE.view(query or {}, strict=strict)


def api_bodies(
    client: TestClient, setup: dict[str, object], table: dict[str, object], p: float, k: int, batch_size: int
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The API's answers to the page's questions: the sweep, the schedule and the table."""
    sweep = client.get(
        f"{REGIMES}/speedup-vs-batch", params={**setup, "p": p, "k": k, "batch": batch_size, "k_max": K_SEARCH_MAX}
    )
    schedule = client.get(f"{REGIMES}/schedule", params={**setup, "p": p, "k_max": K_SEARCH_MAX})
    grid = client.get(f"{REGIMES}/table", params={**setup, **table, "p": p, "k": k, "k_max": TABLE_K_MAX})
    assert sweep.status_code == schedule.status_code == grid.status_code == 200
    return sweep.json(), schedule.json(), grid.json()


def times(value: float) -> str:
    return f"{fixed(value, 2)}×"


def pays_text(batch: int | None, fits: int) -> str:
    if batch is not None:
        return str(batch)
    if not fits:
        return "nothing fits"
    return f"never (1–{fits})" if fits > 1 else "never (1)"


def reference_speedup(regime: dict[str, Any], marked: float, p: float, k: int, setup_cost: float) -> float:
    """A table's regime as the chart draws it: at the setup's draft cost c(B), as the curve is priced (the
    roofline regime prices its own batch, as the table does)."""
    verify = {
        "memory-bound": lambda _: 1.0,
        "compute-bound": lambda k: k + 1.0,
        "linear": lambda k: 1.0 + (regime["beta"] or 0.0) * k,
    }
    if regime["name"] == "roofline":
        return marked
    return cf.speedup(p, k, setup_cost, verify[regime["name"]])


def assert_view_matches_api(
    shown: dict[str, Any], sweep: dict[str, Any], schedule: dict[str, Any], grid: dict[str, Any]
) -> None:
    """The view shows the API's numbers: readouts, chart, schedule and both tables."""
    readouts, point = shown["readouts"], sweep["current"]
    if point["fits"]:
        assert readouts["speedup"] == times(point["speedup"])
        best = f"{point['best_k']} ({times(point['best_speedup'])})" if point["best_k"] else "off"
        assert readouts["best_k"].removeprefix("≥ ") == best
    else:  # no speedup is shown for a batch that does not fit
        assert readouts["speedup"] == readouts["best_k"] == "does not fit" and readouts["fit_note"]
    fits = min(sweep["max_batch_that_fits"], sweep["batch_max"])  # crossovers count only batches that fit
    for key, name in (("crossover", "crossover_batch"), ("best_crossover", "best_crossover_batch")):
        assert readouts[key] == pays_text(sweep[name], fits)
        # a tile's value, at most "never (1–1024)"; the sentence goes under the tiles
        assert len(readouts[key]) <= max(len("nothing fits"), len(f"never (1–{limits.MAX_BATCH})"))
    assert ("never stops paying" in readouts["pays_note"]) == (fits > 0 and sweep["crossover_batch"] is None)
    assert ("Some k pays" in readouts["pays_note"]) == (fits > 0 and sweep["best_crossover_batch"] is None)
    assert readouts["headline"] == sweep["headline"] and shown["schedule_headline"] == schedule["headline"]
    assert readouts["draft_cost"] == fixed(point["draft_cost"], 2)
    assert readouts["verification_cost"] == fixed(point["verification_cost"], 2)
    assert readouts["step"] == (
        f"{fixed(point['target_step_ms'], 2)} ms plain, {fixed(point['verify_step_ms'], 2)} ms verifying"
    )
    assert readouts["bound"] == ("compute-bound" if point["verify_compute_bound"] else "memory-bound")
    capacity = sweep["setup"]["memory_capacity_gb"]
    assert readouts["memory"].startswith(f"{fixed(point['memory_needed_gb'], 1)} / {fixed(capacity, 0)} GB")
    assert readouts["memory"].endswith("(does not fit)") != point["fits"]
    assert readouts["devices"].startswith(f"{sweep['setup']['devices']} × {sweep['setup']['accelerator']['name']}")
    assert readouts["devices_auto"] == str(sweep["setup"]["devices"])
    assert readouts["batch"] == str(sweep["batch"])
    # the chart: the sweep itself, the break-even line, the crossover and the current batch marked
    traces = {trace["meta"]: trace for trace in shown["figures"]["batch-chart"]["data"]}
    assert traces["speedup"]["x"] == sweep["batches"] and traces["speedup"]["y"] == sweep["speedup"]
    assert traces["best"]["y"] == sweep["best_speedup"] and traces["best"]["customdata"] == sweep["best_k"]
    assert traces["break_even"]["y"] == [1, 1]
    assert traces["current"]["x"] == [sweep["batch"]] and traces["current"]["y"] == [point["speedup"]]
    assert ("crossover" in traces) == (sweep["crossover_batch"] is not None)
    # the tables' regimes drawn across the chart are priced with the setup's c(B), as the curve is, and say so
    for side, key in (("a", "regime_left"), ("b", "regime_right")):
        regime, marked = grid[f"regime_{side}"], grid["marked"][f"speedup_{side}"]
        value = reference_speedup(regime, marked, sweep["p"], sweep["k"], point["draft_cost"])
        assert traces[key]["y"] == pytest.approx([value] * 2, rel=1e-12)
        cost = regime["draft_cost"] if regime["name"] == "roofline" else point["draft_cost"]
        assert f", c = {fixed(cost, 2)}: {times(value)}" in traces[key]["name"]
    shapes = shown["figures"]["batch-chart"]["layout"]["shapes"]
    unfit = [shape for shape in shapes if shape.get("name") == "does not fit in memory"]
    assert bool(unfit) == (sweep["max_batch_that_fits"] < sweep["batch_max"])
    if unfit:
        assert unfit[0]["x0"] == max(sweep["max_batch_that_fits"], 1) and unfit[0]["x1"] == sweep["batch_max"]
    # the schedule, row by row
    rows = shown["tables"]["schedule"]["rows"]
    assert [row["cells"][1]["text"] for row in rows] == [str(s["k"]) if s["k"] else "off" for s in schedule["steps"]]
    assert [row["cells"][0]["text"].split("–")[0] for row in rows] == [str(s["batch_from"]) for s in schedule["steps"]]
    assert [row["cells"][2]["text"] for row in rows] == [
        f"{times(s['speedup_at_from'])} → {times(s['speedup_at_to'])}" for s in schedule["steps"]
    ]
    assert [row["class"] for row in rows] == ["on" if s["k"] else "off" for s in schedule["steps"]]
    # both p x k tables
    for side in ("a", "b"):
        table, regime = shown["tables"][side], grid[f"regime_{side}"]
        assert table["caption"] == f"{regime['label']}, c = {fixed(regime['draft_cost'], 3)}"
        assert table["columns"] == ["p \\ k", *(str(k) for k in grid["k_values"])]
        assert [row["cells"][0]["text"] for row in table["rows"]] == [fixed(p, 2) for p in grid["p_values"]]
        assert all(row["cells"][0]["header"] for row in table["rows"])
        texts = [[cell["text"] for cell in row["cells"][1:]] for row in table["rows"]]
        assert texts == [[fixed(value, 2) for value in row] for row in grid[f"speedup_{side}"]]
        classes = [cell["class"].split() for row in table["rows"] for cell in row["cells"][1:]]
        values = [value for row in grid[f"speedup_{side}"] for value in row]
        assert all(("win" in found) == (value > 1) for found, value in zip(classes, values, strict=True))
        assert all(("loss" in found) == (value < 1) for found, value in zip(classes, values, strict=True))
        styles = [cell["style"] for row in table["rows"] for cell in row["cells"][1:]]
        assert all(
            style.startswith("background-color: rgba(46, 139, 87")
            for style, v in zip(styles, values, strict=True)
            if v > 1
        )
        assert all(
            style.startswith("background-color: rgba(192, 57, 43")
            for style, v in zip(styles, values, strict=True)
            if v < 1
        )
    highlighted = sum(
        "highlight" in cell.get("class", "")
        for side in ("a", "b")
        for row in shown["tables"][side]["rows"]
        for cell in row["cells"]
    )
    assert highlighted == (2 if grid["highlight"] else 0)
    if grid["highlight"]:
        assert shown["summary"].startswith(f"At p = {fixed(grid['highlight']['p'], 2)}, k = {grid['highlight']['k']}:")
        assert f"{grid['win_to_loss_cells']} cells flip" in shown["summary"]


def test_defaults_match_the_api(client: TestClient) -> None:
    shown = view()
    assert_view_matches_api(shown, *api_bodies(client, SETUP_DEFAULTS, TABLE_DEFAULTS, 0.8, 4, 1))
    values = {name: state["value"] for name, state in shown["controls"].items()}
    assert {name: values[name] for name in SETUP_DEFAULTS} == SETUP_DEFAULTS
    assert {name: values[name] for name in TABLE_DEFAULTS} == TABLE_DEFAULTS
    assert (values["p"], values["k"], values["batch"]) == (0.8, 4, 1)
    assert shown["readouts"]["verification_cost"] == DEFAULT_VERIFICATION_AT_BATCH_ONE
    # above one pass exactly where the fit gives a cycle time of its own (the protocol chose none today)
    cycle = FITTED_TERMS["cycle_overhead_us"] + FITTED_TERMS["cycle_overhead_per_sequence_us"]
    assert (DEFAULT_VERIFICATION_AT_BATCH_ONE != "1.00") == (cycle > 0)
    assert shown["regime_inputs"] == {"a": {"beta": False, "batch": False}, "b": {"beta": False, "batch": False}}
    hw = [shown["fields"][f"hw_{field}"] for field in ("bandwidth_tb_s", "bf16_tflops", "memory_gb")]
    assert [field["value"] for field in hw] == ["3.35", "989.4", "80"] == [field["preset"] for field in hw]
    assert not any(field["edited"] for field in shown["fields"].values()) and not any(shown["open"].values())
    assert len(shown["tables"]["a"]["rows"]) == 10 and len(shown["tables"]["a"]["rows"][0]["cells"]) == 9
    assert shown["tables"]["a"]["rows"][0]["cells"][1]["text"] == f"{cf.speedup(0.5, 1, 0.15):.2f}"
    # defaults are not written into any address
    assert shown["links"]["self"] == "/batch" and shown["links"]["json"] == "/api/v1/views/batch"
    assert shown["links"]["schedule_json"] == f"{REGIMES}/schedule?p=0.8&k_max={K_SEARCH_MAX}"
    assert shown["notes"] == []


VALID_STATE = {
    "hw": "b200",
    "model": "mixtral-8x7b",
    "draft": "dense-3b",
    "weights": "fp8",
    "kv_cache": "fp8",
    "devices": "4",
    "context": "4096",
    "bandwidth_efficiency": "0.7",
    "compute_efficiency": "0.5",
    "overhead_us": "20",
    "hw_memory_gb": "120",
    "model_layers": "40",
    "p": "0.7",
    "k": "3",
    "batch": "64",
    "regime_a": "roofline",
    "batch_a": "8",
    "regime_b": "linear",
    "beta_b": "0.25",
    "c": "0.2",
}


def test_a_valid_state_matches_the_api_and_its_links(client: TestClient) -> None:
    shown = view(VALID_STATE, strict=True)
    setup = {name: VALID_STATE[name] for name in SETUP_DEFAULTS} | {"hw_memory_gb": 120, "model_layers": 40}
    table = {name: VALID_STATE.get(name, value) for name, value in TABLE_DEFAULTS.items()}
    sweep, schedule, grid = api_bodies(client, setup, table, 0.7, 3, 64)
    assert_view_matches_api(shown, sweep, schedule, grid)
    assert sweep["current"]["verification_cost"] > 1.0  # MoE: four tokens read more experts than one
    assert shown["regime_inputs"] == {"a": {"beta": False, "batch": True}, "b": {"beta": True, "batch": False}}
    memory = shown["fields"]["hw_memory_gb"]
    assert (memory["value"], memory["preset"], memory["edited"]) == ("120", "180", True)
    assert shown["open"] == {"hw": True, "model": True, "draft": False, "cost_terms": False}
    assert shown["fields"]["model_total_params_b"] == {"value": "46.7", "preset": "46.7", "edited": False}
    assert shown["sliders"]["batch"]["position"] == 60 and BATCH_STEPS[60] == 64
    links = shown["links"]
    assert "hw_memory_gb=120" in links["schedule_csv"] and links["schedule_csv"].endswith("format=csv")
    linked = client.get(links["table_json"]).json()
    assert linked["speedup_a"] == grid["speedup_a"] and linked["regime_b"] == grid["regime_b"]
    assert client.get(links["schedule_json"]).json()["steps"] == schedule["steps"]
    assert client.get(links["sweep"]).json()["current"] == sweep["current"]
    csv_rows = client.get(links["schedule_csv"]).text.strip().splitlines()[1:]
    assert len(csv_rows) == len(shown["tables"]["schedule"]["rows"])
    assert dict(parse_qsl(urlsplit(links["self"]).query)) == VALID_STATE


def test_the_one_page_versions_keys_read_the_same(client: TestClient) -> None:
    legacy = {f"rg_{name}": value for name, value in VALID_STATE.items()}
    assert view(legacy) == view(VALID_STATE)
    # the page's own key wins over the older one
    assert view({"k": "5", "rg_k": "3"})["controls"]["k"]["value"] == 5


@pytest.mark.parametrize(
    ("raw", "expected", "position"),
    [("100", 100, 66), ("1", 1, 0), ("1024", 1024, 100), ("16.0", 16, 40), ("3", 3, 16)],
)
def test_batch_is_any_size_and_the_slider_sits_nearest(raw: str, expected: int, position: int) -> None:
    shown = view({"batch": raw}, strict=True)
    assert shown["controls"]["batch"]["value"] == expected and shown["readouts"]["batch"] == str(expected)
    assert shown["sliders"]["batch"]["position"] == position == batch_position(expected)


def test_the_batch_sliders_steps_double_every_ten_positions() -> None:
    assert BATCH_STEPS[0] == 1 and BATCH_STEPS[-1] == limits.MAX_BATCH == 2 ** (len(BATCH_STEPS) // 10)
    assert sorted(BATCH_STEPS) == BATCH_STEPS
    assert all(
        BATCH_STEPS[i + 10] in (2 * BATCH_STEPS[i] - 1, 2 * BATCH_STEPS[i], 2 * BATCH_STEPS[i] + 1) for i in range(90)
    )
    assert all(BATCH_STEPS[batch_position(step)] == step for step in BATCH_STEPS)


@pytest.mark.parametrize(
    ("query", "name", "shown", "note"),
    [
        ({"batch": "5000"}, "batch", 1024, "Batch size B 5000 from the address is out of range; showing 1024."),
        ({"p": "1.01"}, "p", 1.0, "Acceptance p 1.01 from the address is out of range; showing 1.00."),
        ({"k": "20"}, "k", 16, "Draft length k 20 from the address is out of range; showing 16."),
        ({"p": "x"}, "p", 0.8, "Acceptance p from the address is not a number from 0 to 1; showing 0.80."),
        ({"hw": "H100"}, "hw", "h100-sxm", "Accelerator from the address is not one of"),
        ({"bandwidth_efficiency": "0"}, "bandwidth_efficiency", 0.01, "Bandwidth efficiency 0 from the address"),
    ],
)
def test_a_value_the_page_corrects_is_shown_corrected_with_a_note(
    client: TestClient, query: dict[str, str], name: str, shown: object, note: str
) -> None:
    lenient = view(query)
    assert lenient["controls"][name]["value"] == shown
    assert len(lenient["notes"]) == 1 and lenient["notes"][0].startswith(note)
    body = client.get("/batch", params=query).text
    assert lenient["notes"][0].replace("'", "&#39;") in body or lenient["notes"][0] in body
    refused = client.get("/api/v1/views/batch", params=query)
    assert refused.status_code == 422
    detail = refused.json()["detail"][0]
    assert detail["loc"] == ["query", name] and detail["label"] == batch.BY_NAME[name].label
    assert detail["msg"].startswith(f"{batch.BY_NAME[name].label} must be ")


def test_bandwidth_efficiency_zero_names_the_control_and_its_bounds(client: TestClient) -> None:
    refused = client.get("/api/v1/views/batch", params={"bandwidth_efficiency": "0"})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["msg"] == "Bandwidth efficiency must be a number from 0.01 to 1; got 0"


@pytest.mark.parametrize(
    ("edits", "blamed", "rule"),
    [
        (
            {"model": "mixtral-8x7b", "model_experts_per_token": "9"},
            "model_experts_per_token",
            "must not exceed experts",
        ),
        ({"model": "mixtral-8x7b", "model_experts_per_token": "4"}, "model_experts_per_token", "must be at least"),
        ({"draft_active_params_b": "5"}, "draft_active_params_b", "must not exceed total parameters (1.24)"),
    ],
)
def test_a_rule_between_preset_fields_names_the_edit_by_its_label(
    client: TestClient, edits: dict[str, str], blamed: str, rule: str
) -> None:
    label = batch.BY_NAME[blamed].label
    with pytest.raises(ControlError) as raised:
        view({**edits, "model_layers": "40"}, strict=True)
    assert (
        raised.value.control.name == blamed and raised.value.message.startswith(label) and rule in raised.value.message
    )
    assert "_" not in raised.value.message  # the fields in words, as the page labels them
    refused = client.get("/api/v1/views/batch", params=edits).json()["detail"][0]
    assert refused["loc"] == ["query", blamed] and refused["label"] == label
    # read leniently, that edit falls back to the preset's value and says so; the other edits stay
    lenient = view({**edits, "model_layers": "40"})
    assert lenient["fields"][blamed]["edited"] is False
    assert lenient["fields"][blamed]["value"] == lenient["fields"][blamed]["preset"]
    assert lenient["fields"]["model_layers"] == {"value": "40", "preset": "32", "edited": True}
    assert len(lenient["notes"]) == 1 and lenient["notes"][0].startswith(f"{label} ") and rule in lenient["notes"][0]


def test_an_edit_equal_to_the_preset_is_no_edit() -> None:
    shown = view({"model_layers": "32", "hw_memory_gb": "80.0"})
    assert not any(field["edited"] for field in shown["fields"].values())
    assert "layers" not in shown["links"]["schedule_json"] and "memory" not in shown["links"]["schedule_json"]


def test_nothing_fitting_is_said_plainly() -> None:
    shown = view({"model": "dense-405b", "devices": "1"})
    assert shown["readouts"]["crossover"] == shown["readouts"]["best_crossover"] == "nothing fits"
    assert shown["readouts"]["memory"].endswith("(does not fit)")
    assert shown["readouts"]["speedup"] == shown["readouts"]["best_k"] == "does not fit"
    assert (
        shown["readouts"]["fit_note"].startswith("Not even batch 1 fits") and "hold it" in shown["readouts"]["fit_note"]
    )
    unfit = shown["figures"]["batch-chart"]["layout"]["shapes"][-1]
    assert (unfit["type"], unfit["x0"], unfit["x1"]) == ("rect", 1, limits.MAX_BATCH)


def test_best_k_is_searched_as_far_in_the_readouts_as_in_the_schedule() -> None:
    shown = view({"p": "0.99", "model": "dense-405b", "draft": "dense-1b", "context": "0"})
    best = shown["figures"]["batch-chart"]["data"][1]["customdata"][0]
    first_step = shown["tables"]["schedule"]["rows"][0]["cells"][1]["text"]
    assert shown["readouts"]["best_k"].startswith(f"≥ {K_SEARCH_MAX}") and best == K_SEARCH_MAX
    assert first_step == str(K_SEARCH_MAX)


def test_the_pages_bounds_and_lists_are_the_apis(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()["paths"]
    parameters = {
        parameter["name"]: parameter["schema"]
        for path in (f"{REGIMES}/table", f"{REGIMES}/speedup-vs-batch")
        for parameter in schema[path]["get"]["parameters"]
    }
    for control in PAGE.controls:
        found = parameters[control.name]
        found = next((branch for branch in found.get("anyOf", []) if branch.get("type") != "null"), found)
        if control.kind == "select":
            assert [value for value, _ in control.options] == parameters[control.name]["enum"], control.name
        elif control.name not in ("k", "batch"):  # the page's k slider and batch run over part of the API's range
            assert (found["minimum"], found["maximum"]) == (control.low, control.high), control.name
        if control.default is not None:  # a preset field's default is its preset's value
            assert parameters[control.name]["default"] == control.default, control.name
    assert [value for value, _ in batch.BY_NAME["hw"].options] == list(ACCELERATORS)
    assert [value for value, _ in batch.BY_NAME["model"].options] == list(MODELS)
    assert batch.BY_NAME["weights"].options[2] == ("int4", "int4 (0.5 B)")


def test_the_json_twin_is_the_view_the_page_is_rendered_from(client: TestClient) -> None:
    query = {"hw": "mi300x", "model": "mixtral-8x7b", "p": "0.7", "batch": "100", "regime_b": "linear"}
    twin = client.get("/api/v1/views/batch", params=query)
    assert twin.status_code == 200 and twin.json() == json.loads(json.dumps(view(query)))
    html = client.get("/batch", params=query).text
    embedded = html.split('<script type="application/json" id="view-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded) == twin.json()
    assert f'id="speedup">{twin.json()["readouts"]["speedup"]}<' in html
    assert 'data-view="batch"' in html and "data-results" in html and "data-error" in html


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/?rg_hw=b200&k=3&rg_p=0.7", "/batch?hw=b200&p=0.7"),  # the demo's k stays behind
        ("/?rg_batch=100&rg_model_layers=40", "/batch?batch=100&model_layers=40"),
        ("/batch?rg_k=3&k=5&p=0.5", "/batch?k=5&p=0.5"),  # a key of today's wins over its older name
        ("/?rg_p=5", "/batch?p=5"),  # moved as written, so that the page notes its correction
    ],
)
def test_addresses_of_the_one_page_version_open_this_page_with_their_state(
    client: TestClient, old: str, new: str
) -> None:
    response = client.get(old, follow_redirects=False)
    # One redirect: the demo sends this page's keys here under today's names, and drops its own.
    assert response.status_code == 302 and response.headers["location"] == new
    assert client.get(new, follow_redirects=False).status_code == 200


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
    "0x10",
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
    query = {control.name: value for control in PAGE.controls}
    shown = view(query)
    assert shown["readouts"]["speedup"].endswith(("×", "does not fit")) and len(shown["tables"]["a"]["rows"]) == 10
    response = client.get("/batch", params=query)
    assert response.status_code == 200
    main = response.text.split('<main class="wrap" id="main">', 1)[1].split("</main>", 1)[0]
    if set(value) & set("<>\"'():") or len(value) > 20:  # markup and long values; short ones occur in the page
        assert value not in main
    for payload in ("<script>", "<img", "onerror", "onmouseover", "javascript:"):
        assert payload not in main


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([control.name for control in PAGE.controls]),
        st.one_of(st.text(max_size=12), st.floats(allow_nan=True).map(str), st.integers(-5, 5000).map(str)),
        max_size=6,
    )
)
def test_any_address_gives_a_page(query: dict[str, str]) -> None:
    shown = view(query)
    assert shown["readouts"]["speedup"].endswith(("×", "does not fit"))
    assert len(shown["tables"]["a"]["rows"]) == 10


def test_a_70b_target_on_one_h100_shows_no_speedup_and_the_devices_that_hold_it() -> None:
    shown = view({"model": "dense-70b", "devices": "1", "hw": "h100-sxm"})
    readouts = shown["readouts"]
    assert readouts["speedup"] == "does not fit" and readouts["best_k"] == "does not fit"
    assert "Not even batch 1 fits" in readouts["fit_note"] and "2 × H100 SXM hold it" in readouts["fit_note"]


def test_a_batch_past_the_largest_that_fits_shows_no_speedup() -> None:
    readouts = view({"batch": "446"})["readouts"]
    assert readouts["speedup"] == "does not fit"
    assert (
        readouts["fit_note"].startswith("Batch 446 does not fit")
        and "at most 366 sequences fit" in readouts["fit_note"]
    )


def test_every_headline_says_what_the_roofline_leaves_out() -> None:
    readouts = view({})["readouts"]
    assert "no peer-to-peer" in readouts["leaves_out"] and "step-fit" in readouts["leaves_out"]


def test_the_page_offers_the_terms_fitted_to_published_measurements(client: TestClient) -> None:
    from app.model.cost import fitting, published

    # the fitted terms are the defaults: a page priced with other terms (the plain roofline) links back to them
    plain = {name: str(value) for name, value in dataclasses.asdict(fitting.PLAIN_ROOFLINE).items()}
    shown = view({"p": "0.7", "k": "3", "draft": "eagle", **plain})
    assert "given here" in shown["readouts"]["accuracy"] and shown["open"]["cost_terms"]
    address = urlsplit(shown["links"]["fitted_terms"])
    query = dict(parse_qsl(address.query))
    assert address.path == "/batch" and (query["p"], query["k"], query["draft"]) == ("0.7", "3", "eagle")
    terms = published.published_fit()["terms"]
    assert not set(terms) & set(query), "the fitted terms are the defaults: none is written"
    fitted = view(query)
    assert not fitted["open"]["cost_terms"]
    assert fitted["readouts"]["accuracy"].startswith("defaults: ")
    assert "each source predicted by terms fitted on the others" in fitted["readouts"]["accuracy"]
    assert {name: fitted["controls"][name]["value"] for name in terms} == terms
    assert client.get(shown["links"]["fitted_terms"]).status_code == 200


def test_the_draft_steps_overhead_is_the_fitted_one_until_given() -> None:
    from app.model.cost import published

    fitted = published.published_fit()["terms"]["overhead_per_draft_step_us"]
    assert batch.BY_NAME["overhead_per_draft_step_us"].default == fitted
    assert view({})["controls"]["overhead_per_draft_step_us"]["value"] == fitted
    given = view({"overhead_per_draft_step_us": "80", "overhead_us": "10"})
    assert given["controls"]["overhead_per_draft_step_us"]["value"] == 80


# ---------------------------------------------------------------------------
# Issue 24: the Devices count kept and offered, short tile values, one cost on the chart


def test_a_devices_count_that_no_longer_holds_the_models_says_so_and_offers_the_count_that_does() -> None:
    readouts = view({"devices": "1", "model": "dense-70b"})["readouts"]
    assert readouts["devices"] == "1 × H100 SXM"  # the user's count, not the fewest that fit
    assert readouts["devices_note"] == "The two models do not fit on 1 × H100 SXM; 2 hold them."
    assert (readouts["devices_fit"], readouts["devices_fit_label"]) == ("2", "Use 2")
    offered = view({"devices": "2", "model": "dense-70b"})["readouts"]
    assert offered["devices_note"] == offered["devices_fit"] == "" and offered["speedup"].endswith("×")
    # a batch past what the devices in use hold: the count that holds that batch
    batch = view({"batch": "446"})["readouts"]
    assert batch["devices_note"] == "Batch 446 does not fit on 1 × H100 SXM; 2 hold it." and batch["devices_fit"] == "2"
    assert not view({"batch": "446", "devices": "2"})["readouts"]["devices_note"]
    # no count holds it: said, and nothing offered
    none = view({"model": "dense-405b", "devices": "1", "batch": "1024", "context": "131072"})["readouts"]
    assert none["devices_note"].endswith(f"nor on any count up to {limits.MAX_DEVICES}.") and none["devices_fit"] == ""
    assert view({})["readouts"]["devices_note"] == ""


def test_tiles_hold_short_values_and_the_sentence_goes_under_them() -> None:
    readouts = view({"model": "dense-70b", "devices": "2"})["readouts"]
    assert readouts["crossover"] == readouts["best_crossover"] == "never (1–44)"
    assert readouts["pays_note"] == (
        "Speculation at k = 4 never stops paying: it pays at every batch that fits (1 to 44)."
        " Some k pays at every batch that fits (1 to 44)."
    )
    one = view({"model": "dense-70b", "devices": "2", "context": "32768"})["readouts"]
    assert one["crossover"] == "never (1)" and "batch 1, the only one that fits" in one["pays_note"]
    crossing = view({"p": "0.6"})["readouts"]  # both the chosen k and the best one stop paying: nothing to add
    assert crossing["crossover"].isdigit() and crossing["best_crossover"].isdigit() and crossing["pays_note"] == ""
    default = view({})["readouts"]  # k = 4 stops at a batch, a shorter k pays to the last that fits: said under
    assert default["crossover"].isdigit() and default["best_crossover"].startswith("never (1–")
    assert default["pays_note"] == f"Some k pays at every batch that fits (1 to {default['best_crossover'][9:-1]})."
    assert view({"model": "dense-405b", "devices": "1"})["readouts"]["pays_note"] == ""  # nothing fits: fit_note says


def test_the_charts_reference_lines_are_priced_with_the_curves_cost() -> None:
    shown = view({})
    traces = {trace["meta"]: trace for trace in shown["figures"]["batch-chart"]["data"]}
    cost = float(shown["readouts"]["draft_cost"])
    memory_bound = traces["regime_left"]
    assert memory_bound["name"].startswith(f"left: memory-bound (v = 1), c = {fixed(cost, 2)}: ")
    # priced with the readout's c, which is shown to two decimals: within what that rounding allows, no more
    assert cf.speedup(0.8, 4, cost + 0.005) <= memory_bound["y"][0] <= cf.speedup(0.8, 4, cost - 0.005)
    # verification costs at least a pass: the curve at batch 1 is at or below the memory-bound line, never above
    assert traces["speedup"]["x"][0] == 1 and traces["speedup"]["y"][0] <= memory_bound["y"][0]
    # the tables keep their own c, and say it
    assert shown["tables"]["a"]["caption"].endswith(f"c = {fixed(limits.ROOFLINE_TABLE_C, 3)}")


def test_a_marker_at_either_end_of_the_batch_axis_is_drawn_whole() -> None:
    axis = view({})["figures"]["batch-chart"]["layout"]["xaxis"]
    low, high = axis["range"]
    assert low < 0 and high > math.log10(limits.MAX_BATCH)  # room for half a marker beyond batch 1 and the last
    assert axis["tickvals"][0] == 1


def _measured_query(client: TestClient) -> dict[str, str]:
    """The query POST step-fit gives for a sweep measured on a server slower than the defaults."""
    from tests.samples.step_times import slower_server_steps

    steps = slower_server_steps()
    fit = client.post("/api/v1/step-fit", content=steps, headers={"content-type": "text/plain"}).json()
    return dict(parse_qsl(fit["query"]))


def test_a_measured_sweep_moves_the_crossover_and_the_page_says_measured(client: TestClient) -> None:
    measured = _measured_query(client)
    defaults, shown = view({"k": "4"}), view({"k": "4", **measured})
    assert defaults["readouts"]["source"].startswith("Defaults: terms fitted to published measurements")
    source = shown["readouts"]["source"]
    assert source.startswith("Measured: terms fitted to your step times (24 steps, out-of-sample error ")
    assert shown["readouts"]["accuracy"].startswith("measured: fitted to 24 steps")
    assert int(shown["readouts"]["crossover"]) < int(defaults["readouts"]["crossover"])  # the slower arithmetic's
    chart = shown["figures"]["batch-chart"]["data"]
    assert chart[0]["y"] != defaults["figures"]["batch-chart"]["data"][0]["y"]  # the chart is the measured one
    # the links to the API carry the fit, so that the JSON twins say measured too
    for name in ("sweep", "schedule_json"):
        linked = client.get(shown["links"][name]).json()
        assert linked["accuracy"]["source"] == "measured", name
    sweep = client.get(shown["links"]["sweep"]).json()
    assert str(sweep["crossover_batch"]) == shown["readouts"]["crossover"]
    # "price with the fitted terms" goes back to the defaults, measured marks and all
    back = dict(parse_qsl(urlsplit(shown["links"]["fitted_terms"]).query))
    assert not {"fit_steps", "fit_error", "bandwidth_efficiency"} & set(back)
    page = client.get("/batch", params={"k": "4", **measured}).text
    assert source in page and 'id="fit_steps"' in page


def test_one_mark_of_a_fit_without_the_other_is_noted_or_refused_by_its_label(client: TestClient) -> None:
    lenient = view({"fit_steps": "24"})
    assert lenient["readouts"]["source"].startswith("Defaults")
    assert lenient["notes"] == [
        "Out-of-sample error of the fit (%) is needed with Measured steps fitted: the terms are taken as given, not "
        "measured."
    ]
    refused = client.get("/api/v1/views/batch", params={"fit_steps": "24"})
    assert refused.status_code == 422
    detail = refused.json()["detail"][0]
    assert detail["loc"] == ["query", "fit_error"] and detail["label"] == "Out-of-sample error of the fit (%)"


def test_the_chart_shows_the_stated_interval_and_where_stopping_is_within_it() -> None:
    shown = view({"p": "0.7", "hw": "rtx-3090", "draft": "eagle3"})  # the interval holds 1 from batch 22 to 50
    chart = shown["figures"]["batch-chart"]
    traces = {trace["meta"]: trace for trace in chart["data"]}
    low, high, curve = traces["interval_low"], traces["interval"], traces["speedup"]
    assert high["fill"] == "tonexty" and low["showlegend"] is False and high["name"].startswith("k = 4 within")
    assert all(a <= b <= c for a, b, c in zip(low["y"], curve["y"], high["y"], strict=True))
    ranges = [shape for shape in chart["layout"]["shapes"] if shape.get("name", "").startswith("may stop paying")]
    assert len(ranges) == 1 and ranges[0]["x0"] <= ranges[0]["x1"]
    # where the interval holds 1: the band reaches below 1 and above it there, and the range starts where it does
    start = int(ranges[0]["x0"])
    at = curve["x"].index(start)
    assert low["y"][at] <= 1.0 <= high["y"][at]
    assert at > 0 and not low["y"][at - 1] <= 1.0 <= high["y"][at - 1]


def test_where_the_speedup_rises_again_the_chart_marks_where_it_may_not_pay() -> None:
    """A mixture of experts at a long context whose speedup dips and rises again with the batch: the range marked
    on the chart is where it may not pay, and past it the band lies above 1."""
    rising = {"hw": "rtx-pro-6000-blackwell", "devices": "4", "model": "qwen3.5-397b-a17b", "weights": "int4"}
    shown = view({**rising, "draft": "mtp", "context": "65536", "p": "0.8", "k": "3", "batch_max": "128"})
    chart = shown["figures"]["batch-chart"]
    ranges = [shape for shape in chart["layout"]["shapes"] if shape.get("name", "").startswith("may ")]
    assert len(ranges) == 1 and ranges[0]["name"].startswith("may not pay: batches "), ranges
    traces = {trace["meta"]: trace for trace in chart["data"]}
    end = int(ranges[0]["x1"])
    assert traces["interval_low"]["y"][traces["speedup"]["x"].index(end + 1)] > 1.0


def test_each_run_where_paying_is_within_the_error_is_marked_on_its_own() -> None:
    """Mixtral 8x7B in FP8 at k = 4: the interval holds 1 at the smallest batches and again at large ones, with
    batches between where speculation surely pays: two marks, not one across them."""
    chart = view({"model": "mixtral-8x7b", "weights": "fp8", "p": "0.8", "k": "4"})["figures"]["batch-chart"]
    marks = [shape for shape in chart["layout"]["shapes"] if shape.get("name", "").startswith("may ")]
    assert len(marks) == 2 and marks[0]["name"].startswith("may not pay: ") and marks[0]["x1"] < marks[1]["x0"]
    assert all(mark["x1"] > mark["x0"] for mark in marks)  # a run of one batch is drawn with a width too
    traces = {trace["meta"]: trace for trace in chart["data"]}
    between = int(marks[0]["x1"]) + 1
    assert traces["interval_low"]["y"][traces["speedup"]["x"].index(between)] > 1.0


def test_the_band_is_drawn_only_where_it_has_a_width_and_says_what_it_held() -> None:
    shown = view({"p": "0.7", "hw": "rtx-3090", "draft": "eagle3"})
    names = [trace["name"] for trace in shown["figures"]["batch-chart"]["data"]]
    assert any(
        re.fullmatch(r"k = 4 within its 90% interval \(a factor of \d\.\d\d either way\)", name) for name in names
    )
    given = view({"p": "0.7", "hw": "rtx-3090", "draft": "eagle3", "bandwidth_efficiency": "0.5"})
    metas = [trace.get("meta") for trace in given["figures"]["batch-chart"]["data"]]
    assert "interval" not in metas and "interval_low" not in metas  # the user's own terms: no published interval
