"""The decide page's view: the numbers the API gives for the same question, read from the page's controls."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from fastapi.testclient import TestClient
from starlette.datastructures import QueryParams

from app.model.arithmetic import closed_form, draft_sources
from app.model.counters import calibration
from app.model.counters.counts import SpecCounts
from app.model.limits import DEFAULT_C
from app.web.core.config import Settings, get_settings
from app.web.main import create_app
from app.web.pages.controls import ControlError
from app.web.pages.views import decide
from app.web.pages.views.decide import EXAMPLE_DRAFTS, EXAMPLE_K, EXAMPLE_P, EXAMPLE_SEED, PAGE
from app.web.pages.views.decide.calibrate import example_scrape
from tests.samples import engine_reports
from tests.support import answering, free_port

VIEW = "/api/v1/views/decide"
METRICS = "/api/v1/calibrate/metrics"


def view(query: str = "", strict: bool = False) -> dict[str, object]:
    return PAGE.view(QueryParams(query), strict=strict)


def api(client: TestClient, link: str) -> dict[str, object]:
    response = client.get(link)
    assert response.status_code == 200, (link, response.text)
    body: dict[str, object] = response.json()
    return body


def test_defaults_calibrate_the_example_scrape_as_the_api_does(client: TestClient) -> None:
    result = view()
    scrape = client.get(
        "/api/v1/calibrate/example-metrics",
        params={"p": EXAMPLE_P, "k": EXAMPLE_K, "drafts": EXAMPLE_DRAFTS, "seed": EXAMPLE_SEED},
    ).text
    cal = result["calibration"]
    assert cal["example"] == scrape  # the text the page's box opens with
    expected = client.post(METRICS, params={"c": DEFAULT_C, "k_max": 16}, content=scrape).json()
    assert cal["p"] == f"{expected['acceptance']:.3f}"
    # one recommendation, on the user's setup (step 2's schedule at the batch asked for); the generic cost's
    # best k stays only in the predictions table, labelled as not the user's hardware
    schedule_steps = api(client, result["links"]["schedule"])["steps"]
    first = schedule_steps[0]
    assert cal["best_k"] == str(first["k"]) and cal["where"].startswith("On your setup at batch 1")
    assert f"best k {expected['best_k']} ({expected['best_speedup']:.2f}×)" in cal["generic"]
    assert "Not your hardware" in cal["generic"]
    assert len(cal["positions"]["rows"]) == EXAMPLE_K and cal["has_positions"]
    assert [row["cells"][0]["text"] for row in cal["predictions"]["rows"]] == [
        str(row["k"]) for row in expected["predictions"]
    ]
    assert cal["verdict"].startswith(f"Measured at k = {EXAMPLE_K}. Acceptance looks i.i.d.")
    # Every part answers the question its API link asks.
    sources = api(client, result["links"]["sources"])
    for source in sources["sources"]:
        row = result["sources"]["rows"][source["id"]]
        assert row["best_k"] == str(source["best_k"]) and row["best_speedup"] == f"{source['best_speedup']:.2f}×"
        assert row["per_cost"] == f"{source['accepted_per_draft_cost']:.2f}" and not row["edited"]
    assert list(result["sources"]["rows"]) == list(draft_sources.SOURCE_IDS)
    tree = api(client, result["links"]["trees"])
    assert f"{tree['best_speedup']:.2f}×" in result["trees"]["summary"]
    # the trees start from the calibrated p (P1), the rest in the default's proportions: a chain's bound 1/(1 - P1)
    p1 = (
        float(tree["acceptance"][0])
        if "acceptance" in tree
        else float(result["links"]["trees"].split("acceptance=")[1].split(",")[0])
    )
    assert result["trees"]["uses"].startswith(f"Uses P1 = {p1:.3f}, the calibrated p")
    assert f"A chain never yields more than {1 / (1 - p1):.2f} tokens per step" in result["trees"]["summary"]
    schedule = api(client, result["links"]["schedule"])
    assert [row["cells"][1]["text"] for row in result["schedule"]["table"]["rows"]] == [
        str(step["k"]) if step["k"] else "off" for step in schedule["steps"]
    ]
    assert schedule["p"] == pytest.approx(expected["acceptance"])
    # Only the batches that fit in memory are decided, as the API decides them.
    assert result["schedule"]["table"]["rows"][-1]["cells"][0]["text"].endswith(f"–{schedule['batch_limit']}")
    assert result["schedule"]["summary"].endswith(schedule["headline"])
    assert result["figures"]["schedule"]["data"][0]["x"][-1] == schedule["batch_limit"]
    # Defaults are left out of the page's address.
    assert result["links"]["self"] == "/decide" and result["links"]["json"] == VIEW
    assert result["notes"] == []


# The one-page version's keys: old addresses open the page with their state.
LEGACY = (
    "dec_c=0.2&dec_regime=linear&dec_beta=0.25&dec_kmax=12&cal_mode=length&cal_length=2.9&cal_k=4"
    "&tree_p=0.5,0.3,0.1&tree_budget=24&src_edit=ngram:0.9:0.0123,eagle:0.7:0.2"
)


def test_an_old_address_opens_with_its_state_and_matches_the_api(client: TestClient) -> None:
    result = view(LEGACY)
    controls = {name: state["value"] for name, state in result["controls"].items()}
    assert (controls["c"], controls["regime"], controls["beta"], controls["k_max"]) == (0.2, "linear", 0.25, 12)
    assert (controls["mode"], controls["length"], controls["k"]) == ("length", 2.9, 4)
    assert (controls["acceptance"], controls["budget"]) == ("0.5,0.3,0.1", 24)
    assert (controls["ngram_p"], controls["eagle_p"], controls["eagle_c"]) == (0.9, 0.7, 0.2)
    assert controls["ngram_c"] == decide.SOURCE_CONTROLS["ngram"][1].default  # the cited value, as the old page showed
    link = result["links"]["calibration"]
    assert urlsplit(link).path == "/api/v1/calibrate/length"
    expected = api(client, link)
    assert expected["regime"]["beta"] == 0.25 and expected["k"] == 4
    cal = result["calibration"]
    assert cal["p"] == f"{expected['acceptance']:.3f}"
    assert cal["observed"] == f"{expected['mean_acceptance_length']:.2f} / {expected['draft_acceptance_rate']:.2f}"
    assert [row["cells"][3]["text"] for row in cal["predictions"]["rows"]] == [
        f"{row['speedup']:.2f}×" for row in expected["predictions"]
    ]
    assert not cal["has_positions"]
    sources = api(client, result["links"]["sources"])
    assert {source["id"] for source in sources["sources"] if source["edited"]} == {"ngram", "eagle"}
    for source in sources["sources"]:
        row = result["sources"]["rows"][source["id"]]
        assert (row["edited"], row["best_k"]) == (source["edited"], str(source["best_k"]))
    tree = api(client, result["links"]["trees"])
    assert tree["regime"]["beta"] == 0.25 and tree["budget"] == 24
    assert result["trees"]["summary"].startswith(
        f"Best: {tree['best_family']} with {tree['best_budget']} drafted tokens per step, {tree['best_speedup']:.2f}×"
    )
    # The page's own address uses the new names, defaults left out.
    assert dict(QueryParams(urlsplit(result["links"]["self"]).query)) == {
        "c": "0.2",
        "regime": "linear",
        "tree_regime": "linear",  # the old page priced trees with the one cost of every step
        "beta": "0.25",
        "k_max": "12",
        "mode": "length",
        "length": "2.9",
        "k": "4",
        "ngram_p": "0.9",
        "eagle_p": "0.7",
        "eagle_c": "0.2",
        "acceptance": "0.5,0.3,0.1",
        "budget": "24",
    }


def test_old_addresses_on_the_demo_redirect_here_with_their_state(client: TestClient) -> None:
    response = client.get("/?" + LEGACY, follow_redirects=False)
    assert response.status_code == 302
    location = response.headers["location"]
    assert urlsplit(location).path == "/decide"
    # Under today's names; the one key that held every source's edits gives each control its own.
    assert dict(QueryParams(urlsplit(location).query)) == {
        "c": "0.2",
        "regime": "linear",
        "tree_regime": "linear",  # the old page priced trees with the one cost of every step
        "beta": "0.25",
        "k_max": "12",
        "mode": "length",
        "length": "2.9",
        "k": "4",
        "acceptance": "0.5,0.3,0.1",
        "budget": "24",
        "ngram_p": "0.9",
        "ngram_c": "0.0123",
        "eagle_p": "0.7",
        "eagle_c": "0.2",
    }
    assert view(urlsplit(location).query)["controls"] == view(LEGACY)["controls"]


def test_roofline_rate_mode_prices_with_the_batch(client: TestClient) -> None:
    result = view("regime=roofline&batch=32&c=0.9&mode=rate&rate=0.6&k=3")
    expected = api(client, result["links"]["calibration"])
    assert expected["regime"]["name"] == "roofline" and expected["regime"]["batch"] == 32
    assert result["calibration"]["p"] == f"{expected['acceptance']:.3f}"
    assert result["calibration"]["best_speedup"] == f"{expected['best_speedup']:.2f}×"
    assert result["calibration"]["example"] is None or result["calibration"]["example"].startswith("# HELP")
    assert api(client, result["links"]["trees"])["regime"]["batch"] == 32


def test_an_edited_source_is_priced_with_its_own_p_and_c() -> None:
    source = next(source for source in draft_sources.DEFAULT_SOURCES if source.id == "ngram")
    result = view("ngram_p=0.9")
    best, speedup = closed_form.best_k(0.9, source.draft_cost, 16)  # c kept: the exact cited value
    row = result["sources"]["rows"]["ngram"]
    assert row["edited"] and row["best_k"] == str(best) and row["best_speedup"] == f"{speedup:.2f}×"
    assert not result["sources"]["rows"]["eagle"]["edited"]
    assert result["links"]["self"] == "/decide?ngram_p=0.9"


@pytest.mark.parametrize(
    ("query", "label", "fragment", "shown"),
    [
        ("mode=length&length=9&k=3", "Mean acceptance length", "from 1 to k + 1 = 4 at k = 3", ("length", 4.0)),
        ("acceptance=0.2,0.5", "Positional acceptance", "must not increase", ("acceptance", "0.6,0.2,0.1,0.05")),
        ("acceptance=0.7,0.6", "Positional acceptance", "sum to at most 1", ("acceptance", "0.6,0.2,0.1,0.05")),
        ("acceptance=a,b", "Positional acceptance", "comma-separated numbers", ("acceptance", "0.6,0.2,0.1,0.05")),
        ("acceptance=" + ",".join(["0.01"] * 17), "Positional acceptance", "at most 16", None),
    ],
)
def test_a_rule_across_controls_names_the_label(
    client: TestClient, query: str, label: str, fragment: str, shown: tuple[str, object] | None
) -> None:
    with pytest.raises(ControlError) as raised:
        view(query, strict=True)
    assert raised.value.control.label.startswith(label) and fragment in raised.value.message
    response = client.get(f"{VIEW}?{query}")
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert detail["label"].startswith(label) and detail["msg"].startswith(label) and fragment in detail["msg"]
    # The page itself shows what it used instead, with a note naming the control.
    lenient = view(query)
    assert any(note.startswith(label) and fragment in note for note in lenient["notes"])
    if shown is not None:
        name, value = shown
        assert lenient["controls"][name]["value"] == value


def test_a_malformed_acceptance_is_named_once_with_the_value_at_fault() -> None:
    (note,) = [note for note in view("acceptance=0.6,x")["notes"] if note.startswith("Positional acceptance")]
    assert note.endswith(": must be comma-separated numbers; got 'x'; showing 0.6,0.2,0.1,0.05.")


@pytest.mark.parametrize(
    ("query", "label"),
    [
        ("c=20", "Draft cost c per draft step"),
        ("regime=fast", "Verification cost"),
        ("batch=0", "Batch size (roofline)"),
        ("k_max=65", "Largest k searched"),
        ("mode=guess", "I have"),
        ("rate=1.5", "Draft acceptance rate"),
        ("k=0", "Draft length k it was measured at"),
        ("report_k=6", "Draft length k, if the report does not say it"),  # the example scrape counts k = 5
        ("eagle_c=11", "Draft cost c of Feature-level drafting (EAGLE)"),
        ("budget=257", "Tokens verified per step (budget)"),
    ],
)
def test_the_json_twin_refuses_what_the_page_would_correct(client: TestClient, query: str, label: str) -> None:
    response = client.get(f"{VIEW}?{query}")
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert detail["label"] == label and detail["msg"].startswith(label)
    assert view(query)["notes"][0].startswith(label)  # the page clamps or falls back, and says so


def test_a_k_the_report_contradicts_is_corrected_on_the_page_and_refused_by_the_json_twin(client: TestClient) -> None:
    label = "Draft length k, if the report does not say it"
    for given in ("3", "6", "1e308"):  # 1e308 is clamped to 64 first: two notes
        page = client.get(f"/decide?report_k={given}")
        assert page.status_code == 200, (given, page.text[:300])
        assert f"{label}: k = " in page.text and "per-position counters for k = 5; showing 0." in page.text
        result = view(f"report_k={given}")
        assert result["controls"]["report_k"]["value"] == 0 and "report_k" not in result["links"]["self"]
        assert result["calibration"] == view()["calibration"]  # read with the report's own k, as at the defaults
    refused = client.get(f"{VIEW}?report_k=6").json()["detail"][0]
    assert refused["loc"] == ["query", "report_k"] and refused["label"] == label
    assert refused["msg"] == f"{label}: k = 6 was given but the exposition has per-position counters for k = 5"


def test_a_clamped_value_is_shown_clamped_with_a_note() -> None:
    result = view("c=20&budget=999")
    assert result["controls"]["c"]["value"] == 10.0 and result["controls"]["budget"]["value"] == 256
    assert result["notes"] == [
        "Draft cost c per draft step 20 from the address is out of range; showing 10.",
        "Tokens verified per step (budget) 999 from the address is out of range; showing 256.",
    ]
    assert result["links"]["self"] == "/decide?c=10&budget=256"


def test_a_posted_scrape_is_calibrated_and_never_enters_the_address(client: TestClient) -> None:
    scrape = calibration.example_exposition(0.65, 3, drafts=100_000, engines=2)
    response = client.post(f"{VIEW}?c=0.1", json={"metrics": scrape})
    assert response.status_code == 200
    result = response.json()
    expected = client.post(METRICS, params={"c": 0.1}, content=scrape).json()
    assert result["calibration"]["p"] == "0.650" == f"{expected['acceptance']:.3f}"
    # the generic cost's best k is the API's; the recommendation is step 2's schedule on the user's setup at batch 1
    assert f"best k {expected['best_k']} (" in result["calibration"]["generic"]
    best_k = result["calibration"]["best_k"]
    assert result["calibration"]["where"].startswith("On your setup at batch 1, from step 2's schedule: k = " + best_k)
    assert len(result["calibration"]["positions"]["rows"]) == 3
    assert result["calibration"]["example"] is None
    assert result["links"]["self"] == "/decide?c=0.1" and "metrics" not in result["links"]["json"]


def test_a_baseline_is_subtracted(client: TestClient) -> None:
    before = calibration.example_exposition(0.5, 4, drafts=1_000)
    after = calibration.example_exposition(0.5, 4, drafts=11_000)
    result = client.post(VIEW, json={"metrics": after, "baseline": before}).json()
    expected = client.post(METRICS, json={"metrics": after, "baseline": before}).json()
    assert result["calibration"]["p"] == f"{expected['acceptance']:.3f}"


@pytest.mark.parametrize(
    ("body", "label", "fragment"),
    [
        ({"metrics": "hello world"}, "Engine report", "unknown format"),
        ({"metrics": "process_cpu_seconds_total 3\n"}, "Engine report", "without speculative-decoding series"),
        ({"metrics": ""}, "Engine report", "empty"),
        ({"metrics": "x" * (calibration.MAX_EXPOSITION_BYTES + 1)}, "Engine report", "at most 1000000"),
        (
            {"metrics": calibration.example_exposition(0.5, 4), "baseline": "hello world"},
            "Earlier report",
            "unknown format",
        ),
    ],
)
def test_a_bad_scrape_is_refused_naming_its_label(
    client: TestClient, body: dict[str, str], label: str, fragment: str
) -> None:
    response = client.post(VIEW, json=body)
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert detail["label"] == label and detail["loc"][0] == "body"
    assert detail["msg"].startswith(label) and fragment in detail["msg"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"not json", "JSON object"),
        (b'["a"]', "JSON object"),
        (b'{"metrics": 3}', "texts among: baseline, metrics"),
        (b'{"c": "0.3"}', "texts among: baseline, metrics"),
        (b"\xff\xfe", "UTF-8"),
    ],
)
def test_a_malformed_body_is_refused(client: TestClient, content: bytes, fragment: str) -> None:
    response = client.post(VIEW, content=content, headers={"content-type": "application/json"})
    assert response.status_code == 422 and fragment in response.json()["detail"][0]["msg"]


def test_an_oversized_body_is_refused_before_it_is_read(client: TestClient) -> None:
    limit = 2 * 2 * calibration.MAX_EXPOSITION_BYTES + 65_536
    response = client.post(
        VIEW, content=b"{}", headers={"content-type": "application/json", "content-length": str(limit + 1)}
    )
    assert response.status_code == 422 and "at most" in response.json()["detail"][0]["msg"]


def test_views_of_other_pages_take_no_body(client: TestClient) -> None:
    assert client.post("/api/v1/views/demo", json={}).status_code == 405
    assert client.post("/api/v1/views/nothing", json={}).status_code == 404


HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>'


@pytest.mark.parametrize(
    "query",
    [
        {key: HOSTILE for key in ("dec_c", "dec_regime", "dec_beta", "dec_batch", "dec_kmax", "cal_mode")},
        {key: HOSTILE for key in ("cal_rate", "cal_length", "cal_k", "tree_p", "tree_budget", "src_edit")},
        {"c": "nan", "beta": "inf", "batch": "-1", "k_max": "1e999", "k": "0", "rate": "2"},
        {"c": "1_0", "length": "Infinity", "budget": "0x1000", "acceptance": "", "mode": "METRICS"},
        {"regime": "roofline ", "k_max": "\x00", "acceptance": "9" * 1500, "src_edit": ":::,::" * 100},
    ],
)
def test_malformed_state_falls_back_and_never_echoes(client: TestClient, query: dict[str, str]) -> None:
    result = PAGE.view(query, strict=False)
    assert result["notes"], "each correction is said on the page"
    for control in PAGE.controls:
        value = result["controls"][control.name]["value"]
        assert value == control.default or (control.low is not None and control.low <= value <= (control.high or 0))
    html = client.get("/decide?" + urlencode(query)).text
    assert "<script>alert" not in html and "<img src=x" not in html


def test_the_first_paint_is_the_view(client: TestClient) -> None:
    html = client.get("/decide?" + LEGACY).text
    start = html.index('<script type="application/json" id="view-data">') + len(
        '<script type="application/json" id="view-data">'
    )
    embedded = json.loads(html[start : html.index("</script>", start)])
    assert embedded == client.get(VIEW, params=dict(QueryParams(urlsplit(view(LEGACY)["links"]["self"]).query))).json()
    cal = embedded["calibration"]
    assert f'<span data-text="calibration.p" class="readout-value" id="cal-p">{cal["p"]}</span>' in html
    assert '<option value="linear" selected>' in html and '<option value="length" selected>' in html
    assert html.count('<tr data-id="') == len(draft_sources.SOURCE_IDS)
    assert 'id="ngram_p" name="ngram_p"' in html and 'value="0.9"' in html
    # The fields of other modes and regimes are hidden until their mode or regime is chosen.
    assert '<div data-when="mode:rate" hidden>' in html and '<div data-when="regime:roofline" hidden>' in html
    assert '<div data-when="regime:linear">' in html


# ---------------------------------------------------------------------------
# Any engine's report, the user's setup, the engine's config

ENGINE_SAMPLES = {
    "sglang-server-info": ("SGLang", 0.7, 4),
    "sglang-metrics": ("SGLang", 0.6, 3),
    "trtllm-iteration-stats": ("TensorRT-LLM", 0.75, 4),
    "llamacpp-log": ("llama.cpp", 0.65, 5),
    "vllm-metrics": ("vLLM", 0.8, 5),
}


@pytest.mark.parametrize("format_name", list(ENGINE_SAMPLES))
def test_each_engine_report_calibrates_on_the_page_within_its_interval(client: TestClient, format_name: str) -> None:
    engine, p, k = ENGINE_SAMPLES[format_name]
    report = engine_reports.example_report(format_name, p, k, cycles=4_000, seed=3)
    result = client.post(VIEW, json={"metrics": report}).json()
    read = result["calibration"]["engine"]
    assert read["shown"] and read["engine"] == engine
    api_answer = client.post("/api/v1/calibrate", content=report).json()
    assert result["calibration"]["p"] == f"{api_answer['p']:.3f}"
    if read["p_low"] is not None:  # a mean-only gauge (SGLang /metrics without a count) carries no interval
        assert read["p_low"] <= p <= read["p_high"]
        assert (read["p_low"], read["p_high"]) == (api_answer["p_low"], api_answer["p_high"])
    else:
        assert abs(api_answer["p"] - p) < 0.05
    assert read["k"].startswith(f"{k} ")


def test_several_classes_are_calibrated_each_on_their_own(client: TestClient) -> None:
    report = engine_reports.example_report("vllm-metrics", 0.7, 4, cycles=3_000, seed=5, classes=3)
    read = client.post(VIEW, json={"metrics": report}).json()["calibration"]["engine"]
    assert read["several"]
    assert [row["cells"][0]["text"] for row in read["classes"]["rows"]] == ["model-0", "model-1", "model-2"]


def test_counters_that_go_down_are_refused_naming_the_earlier_report(client: TestClient) -> None:
    before = calibration.example_exposition(0.5, 4, drafts=11_000)
    after = calibration.example_exposition(0.5, 4, drafts=1_000)
    response = client.post(VIEW, json={"metrics": after, "baseline": before})
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert detail["label"] in ("Earlier report", "Engine report") and detail["msg"].startswith(detail["label"])


def test_the_page_takes_what_post_calibrate_takes_and_gives_its_numbers(client: TestClient) -> None:
    """One calibration of a report: the page calibrates through POST /calibrate's service function, so a body
    {"report": ..., "baseline": ...} pasted as the report reads as the API reads it, to the same numbers."""
    before = calibration.example_exposition(0.8, 4, drafts=10_000)
    after = engine_reports.example_report("vllm-metrics", 0.8, 4, cycles=40_000, seed=2)
    wrapped = json.dumps({"report": calibration.example_exposition(0.8, 4, drafts=60_000), "baseline": before})
    for report in (after, wrapped):
        read = client.post(VIEW, json={"metrics": report}).json()["calibration"]
        answer = client.post("/api/v1/calibrate", content=report).json()
        assert read["p"] == f"{answer['p']:.3f}"
        assert (read["engine"]["p_low"], read["engine"]["p_high"]) == (answer["p_low"], answer["p_high"])
        assert read["engine"]["k"].startswith(f"{answer['k']} ")
    counted = client.post("/api/v1/calibrate", content=wrapped).json()
    assert counted["p"] == pytest.approx(0.8, abs=1e-3) and counted["cycles"] == 50_000  # since the baseline


def test_a_url_is_not_fetched_unless_the_setting_allows_it(client: TestClient) -> None:
    response = client.post(VIEW + "?url=http%3A%2F%2F10.0.0.1%3A8000%2Fmetrics", json={"metrics": ""})
    assert response.status_code == 200
    message = response.json()["calibration"]["engine"]["fetch"]
    assert "SPECDEC_ALLOW_FETCH" in message and "specdec-lab calibrate --from http://10.0.0.1:8000/metrics" in message
    engine = response.json()["calibration"]["engine"]
    assert engine["format"].startswith("the example report, not yours")  # never passed off as the server's
    assert engine["notes"][0].startswith("The numbers below are the example report's, not your server's")
    # nothing of the example's shows as a result: the big cards and the verdict wait for a report
    calibrated, verdict = response.json()["calibration"], response.json()["verdict"]
    assert [calibrated[name] for name in ("p", "best_k", "best_speedup", "observed")] == ["–"] * 4
    assert verdict["schedule"] == "No report read yet" and verdict["ready"] is False
    assert view()["verdict"]["ready"] is True  # type: ignore[index]
    refused = client.post(VIEW + "?url=file%3A%2F%2F%2Fetc%2Fpasswd", json={"metrics": ""})
    assert refused.status_code == 422 and refused.json()["detail"][0]["label"] == "Report URL"


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "llamacpp"])
def test_the_config_is_the_engine_config_services_text(client: TestClient, engine: str) -> None:
    query = f"engine={engine}&hw=a100-80gb-sxm&model=dense-70b&draft=dense-1b&context=2048&devices=0"
    result = view(query)
    answer = api(client, result["links"]["config"])
    assert result["config"]["text"] == answer["text"]
    assert result["config"]["headline"] == answer["headline"]
    assert answer["p"] == pytest.approx(float(result["calibration"]["p"]), abs=5e-4)
    schedule = api(client, result["links"]["schedule"])
    assert result["schedule"]["max_batch_that_fits"] == schedule["max_batch_that_fits"]


def test_the_schedule_is_on_the_users_setup_and_only_where_it_fits() -> None:
    small, large = view("devices=1&model=dense-70b"), view("devices=8&model=dense-70b")
    assert small["schedule"]["max_batch_that_fits"] < large["schedule"]["max_batch_that_fits"]
    for result in (small, large):
        batches = result["figures"]["schedule"]["data"][0]["x"]
        assert max(batches, default=0) <= result["schedule"]["max_batch_that_fits"]
        assert str(result["schedule"]["max_batch_that_fits"]) in result["schedule"]["fits"]


def test_the_draft_sources_chart_shows_the_figure_the_text_calls_decisive() -> None:
    result = view()
    bars = result["figures"]["sources"]["data"][0]
    best = result["figures"]["sources"]["data"][1]["y"]
    assert bars["name"] == "tokens per unit of cycle cost"
    # Tokens per unit of the whole cycle's cost is the speedup at the measured depth: never above the best speedup.
    assert all(bar <= top + 1e-9 for bar, top in zip(bars["y"], best, strict=True))
    ngram = bars["x"].index("PLD")
    assert bars["y"][ngram] < max(bars["y"])  # prompt lookup does not lead once verification is counted
    # both are speedups: one axis, so that no number reads on two scales
    layout = result["figures"]["sources"]["layout"]
    assert "yaxis2" not in layout and all("yaxis" not in trace for trace in result["figures"]["sources"]["data"])


def test_the_two_trees_are_named_apart_and_the_assumption_is_said() -> None:
    result = view()
    tokens = {trace["name"] for trace in result["figures"]["trees"]["data"]}
    speedups = {trace["name"] for trace in result["figures"]["trees_speedup"]["data"]}
    assert "most-tokens tree" in tokens and "best-speedup tree" not in tokens
    assert "best-speedup tree" in speedups and "most-tokens tree" not in speedups
    assert result["trees"]["assumption"].startswith("Roofline of")
    assert view("tree_regime=memory-bound")["trees"]["assumption"].startswith("Memory-bound")


def test_the_config_takes_the_draft_model_the_drafter_and_the_engine_version(client: TestClient) -> None:
    query = "engine=sglang&method=EAGLE3&draft_path=org/eagle3&model=dense-70b"
    config = view(query)["config"]
    assert config["engine_version"] == "SGLang 2026-08"  # the newest: PR #33518 (2ed6dba)
    assert "--speculative-algorithm EAGLE3" in config["text"] and "org/eagle3" in config["text"]
    assert config["files"][0]["name"] == "adaptive.json"
    api = client.get(
        f"/api/v1/engine-config?engine=sglang&p={0.8!r}&model=dense-70b&method=EAGLE3&draft_path=org/eagle3"
    )
    assert api.status_code == 200
    older = view("engine=trtllm&engine_version=2025-10&draft_path=org/draft")["config"]
    assert older["engine_version"] == "TensorRT-LLM 2025-10"
    empty = view("engine=vllm")["config"]
    assert empty["placeholders"] and any("fill in model" in note for note in empty["notes"])


def test_data_parallel_ranks_are_a_control_and_drop_vllms_schedule_as_the_api_does(client: TestClient) -> None:
    # vllm/config/vllm.py @ 000fc94b754f _maybe_disable_dynamic_sd_for_data_parallel: above one rank the schedule goes
    query = "engine=vllm&model=dense-70b&draft_path=org/draft&batch=4"
    single = view(query)
    assert single["controls"]["data_parallel"]["value"] == 1
    assert "num_speculative_tokens_per_batch_size" in single["config"]["text"]
    two = view(query + "&data_parallel=2")
    assert two["controls"]["data_parallel"]["value"] == 2
    config = two["config"]
    assert "num_speculative_tokens_per_batch_size" not in config["text"] and "--data-parallel-size 2" in config["text"]
    assert any("_maybe_disable_dynamic_sd_for_data_parallel" in note for note in config["notes"])
    api = client.get(
        f"/api/v1/engine-config?engine=vllm&p={0.8!r}&model=dense-70b&draft_path=org/draft&batch=4&data_parallel=2"
    )
    assert api.status_code == 200 and "--data-parallel-size" in api.json()["flags"]
    page = client.get(f"/decide?{query}&data_parallel=2").text
    assert 'id="data_parallel"' in page and "Data-parallel ranks" in page and 'max="64"' in page


def test_every_link_of_the_view_is_encoded_and_reads_back(client: TestClient) -> None:
    # one helper writes them (app.service.inputs.link): a draft path with + (a space once decoded, if written raw)
    query = "engine=llamacpp&model=dense-70b&draft_path=~/models/a%2Bb.gguf&ngram_p=0.9&eagle_c=0.25"
    result = view(query)
    links = result["links"]
    for name in ("config", "rules", "dashboard"):
        assert dict(parse_qsl(urlsplit(links[name]).query))["draft_path"] == "~/models/a+b.gguf", name
    assert "~/models/a+b.gguf" in json.dumps(api(client, links["config"]))
    edits = dict(parse_qsl(urlsplit(links["sources"]).query))["overrides"]
    assert {item.split(":")[0] for item in edits.split(",")} == {"ngram", "eagle"}
    sources = api(client, links["sources"])
    assert {source["id"] for source in sources["sources"] if source["edited"]} == {"ngram", "eagle"}
    addresses = {name: address for name, address in links.items() if address.startswith("/")}  # not the words
    assert len(addresses) > 10
    for name, address in addresses.items():
        assert " " not in address and "+" not in address, (name, address)  # a raw + would read back as a space


@pytest.mark.parametrize(
    ("query", "label"),
    [
        ("engine=vllm&engine_version=0.1", "Engine version"),
        ("engine=vllm&data_parallel=0", "Data-parallel ranks"),
        ("engine=llamacpp&method=medusa", "Drafter"),
        ("engine=vllm&draft_path=a%20b;c", "Draft model (path or name)"),
    ],
)
def test_a_bad_config_choice_is_refused_naming_its_label(client: TestClient, query: str, label: str) -> None:
    response = client.get(f"{VIEW}?{query}")
    assert response.status_code == 422
    assert response.json()["detail"][0]["label"] == label
    assert view(query)["notes"][0].startswith(label)


def test_a_report_with_per_position_counts_decides_from_its_measured_profile(client: TestClient) -> None:
    report = engine_reports.example_report("vllm-metrics", 0.75, 4, cycles=4_000, seed=5)
    result = client.post(VIEW, json={"metrics": report}).json()
    assert "measured profile up to k = 4" in result["schedule"]["acceptance_model"]
    assert result["schedule"]["summary"].startswith("From the measured acceptance profile")
    assert "profile=" in result["links"]["config"]
    mean_only = engine_reports.example_report("sglang-server-info", 0.75, 4, cycles=4_000, seed=5)
    result = client.post(VIEW, json={"metrics": mean_only}).json()
    assert "i.i.d. model" in result["schedule"]["acceptance_model"]


def test_a_llama_log_without_its_draft_length_asks_for_it_in_a_field_the_page_has(client: TestClient) -> None:
    log = (
        "slot print_timing: id  0 | task 3 | draft acceptance = 0.80000 (   40 accepted /    50 generated), "
        "mean len =  3.00\n"
    )
    response = client.post(VIEW, json={"metrics": log})
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert (
        detail["label"] == "Draft length k, if the report does not say it" and "give it in this field" in detail["msg"]
    )
    answered = client.post(f"{VIEW}?report_k=5", json={"metrics": log})
    assert answered.status_code == 200, answered.text
    assert answered.json()["calibration"]["engine"]["k"].startswith("5 ")


def test_the_rules_and_dashboard_for_this_setup_are_linked_and_answer(client: TestClient) -> None:
    result = view()
    rules = client.get(result["links"]["rules"])
    assert rules.status_code == 200, rules.text
    assert "SpeculativeDecodingNotPaying" in rules.text and "p_low=" in result["links"]["rules"]
    dashboard = client.get(result["links"]["dashboard"])
    assert dashboard.status_code == 200 and dashboard.json()["panels"]


def test_the_page_shows_the_rules_and_dashboard_the_api_serves_for_this_setup(client: TestClient) -> None:
    result = view("engine=trtllm&hw=h200&batch=8")
    watch = result["watch"]
    assert watch["available"] is True
    served = client.get(result["links"]["rules"])
    assert served.status_code == 200 and watch["rules_text"] == served.text
    assert "&batch=8" in result["links"]["rules"] and "hw=h200" in result["links"]["rules"]
    assert json.loads(watch["dashboard_text"]) == client.get(result["links"]["dashboard"]).json()
    names = [line.split(":", 1)[0] for line in watch["alerts"]]
    assert names == [
        "SpeculativeDecodingNotPaying",
        "SpeculativeAcceptanceBelowCalibrated",
        "SpeculativeDraftLengthOffSchedule",
    ]
    assert "TensorRT-LLM 2026-09" in watch["headline"] and "below p = " in watch["headline"]


def test_the_rules_shown_on_the_page_load_into_prometheus(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is required: `make prometheus`"
    for engine in ("vllm", "sglang", "trtllm", "llamacpp"):
        text = view(f"engine={engine}")["watch"]["rules_text"]
        path = tmp_path / f"{engine}.rules.yml"
        path.write_text(text)
        checked = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
        assert checked.returncode == 0, (engine, checked.stdout, checked.stderr)


def test_an_engine_version_without_counters_says_what_is_missing_and_shows_no_file() -> None:
    watch = view("engine=llamacpp&engine_version=2026-03")["watch"]
    assert watch["available"] is False
    assert watch["rules_text"] == "" and watch["dashboard_text"] == ""
    assert "llama.cpp cannot be watched" in watch["unavailable"] and "only in its log" in watch["unavailable"]


def test_the_example_report_says_it_is_an_example_and_a_report_of_ones_own_does_not(client: TestClient) -> None:
    opened = view()["calibration"]["engine"]["example"]
    assert opened.startswith("Example:") and "synthetic report's at p = 0.80" in opened
    example = client.post(VIEW, json={"metrics": example_scrape(0.8)}).json()
    assert example["calibration"]["engine"]["example"] == opened
    own = engine_reports.example_report("sglang-server-info", 0.7, 4, cycles=3_000, seed=9)
    assert client.post(VIEW, json={"metrics": own}).json()["calibration"]["engine"]["example"] == ""


def test_the_schedule_says_how_good_it_is(client: TestClient) -> None:
    default = view()["schedule"]
    assert isinstance(default, dict)
    assert str(default["accuracy"]).startswith("How good: defaults: ")
    assert "each source predicted by terms fitted on the others" in str(default["accuracy"])
    # the error of the setup's own class, as /batch and the API state it beside the same setup, not every point's
    batch = client.get("/api/v1/regimes/schedule").json()
    assert batch["accuracy"]["summary"].split(". Fit them")[0] in str(default["accuracy"])
    assert "of this class (draft-model drafts, any engine, NVIDIA Hopper, short context)" in str(default["accuracy"])
    eagle = view("draft=eagle3&hw=rtx-3090")["schedule"]
    assert isinstance(eagle, dict) and "head drafts, any engine, desktop GPU" in str(eagle["accuracy"])


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "llamacpp"])
@pytest.mark.parametrize("batch", [1, 16, 64])
def test_the_verdict_is_the_config_the_engine_runs(client: TestClient, engine: str, batch: int) -> None:
    """The page opens with one verdict, read from the same plan as the config: its k at the user's batch is the k
    the engine runs there when it reads the config back, and its schedule names the config's first range."""
    result = view(f"engine={engine}&regime=roofline&batch={batch}")
    verdict = result["verdict"]
    config = api(client, result["links"]["config"])  # type: ignore[index]
    runs = config["engine_k_by_batch"]
    assert isinstance(verdict, dict) and isinstance(runs, list)
    at = min(batch, len(runs))
    if batch not in config["differs_at"]:  # where the engine can run the schedule exactly (not a single-k engine)
        assert (f"k = {runs[at - 1]}," if runs[at - 1] else "leave it off") in verdict["speedup"]
    steps = config["schedule"]["steps"]
    first = steps[0]
    batches = (
        f"batch {first['batch_from']}"
        if first["batch_from"] == first["batch_to"]
        else f"batches {first['batch_from']}–{first['batch_to']}"
    )
    assert (
        verdict["schedule"]
        .split(": ", 1)[1]
        .startswith(f"k = {first['k']} at {batches}" if first["k"] else f"off at {batches}")
    )


def test_a_reports_model_name_chooses_the_target_or_says_it_differs(client: TestClient) -> None:
    served = 'model_name="meta-llama/Llama-3.3-70B-Instruct"'
    scrape = example_scrape(0.7).replace('model_name="target-model"', served)
    chosen = client.post(VIEW + "?mode=metrics", json={"metrics": scrape}).json()
    assert chosen["controls"]["model"]["value"] == "dense-70b"
    assert "Llama-3.3-70B-Instruct" in chosen["verdict"]["target"]
    assert "model=dense-70b" in chosen["links"]["self"]
    # the schedule is the 70B's: the same as asking for it
    asked = client.post(VIEW + "?mode=metrics&model=dense-70b", json={"metrics": scrape}).json()
    assert chosen["schedule"] == asked["schedule"] and asked["verdict"]["target"] == ""
    # a target the user chose stays, and the page says the report is another model
    other = client.post(VIEW + "?mode=metrics&model=dense-8b", json={"metrics": scrape}).json()
    assert other["controls"]["model"]["value"] == "dense-8b"
    assert "not the chosen target" in other["verdict"]["target"]
    # a name that is no preset chooses nothing and says so
    unknown = client.post(
        VIEW + "?mode=metrics", json={"metrics": scrape.replace("Llama-3.3-70B-Instruct", "Qwen3-32B")}
    ).json()
    assert unknown["controls"]["model"]["value"] == PAGE.defaults()["model"]
    assert "matches no target preset" in unknown["verdict"]["target"]
    # the example report's stand-in name says nothing
    assert view()["verdict"]["target"] == ""  # type: ignore[index]


def test_a_pasted_scrape_with_several_classes_shows_the_rollout_plan() -> None:
    """One table: class, acceptance, batches, verdict, gain and config, the classes in rollout order."""
    from fastapi.testclient import TestClient

    from app.model.live import rollout_plan as arithmetic
    from app.web.main import app
    from tests.test_rollout_plan import exposition

    client = TestClient(app)
    view = client.post("/api/v1/views/decide", json={"metrics": exposition(10.0)}).json()
    table = view["calibration"]["engine"]["rollout"]
    assert table["columns"] == ["Class", "Acceptance", "Batches", "Verdict", "Gain", "Config"]
    rows = [[cell["text"] for cell in row["cells"]] for row in table["rows"]]
    assert [row[0] for row in rows] == ["chat", "code"]
    assert rows[0][3] == arithmetic.TURN_ON and rows[0][5].startswith("--speculative-config")
    assert rows[1][3] == arithmetic.LEAVE_OFF and rows[1][5] == "–"
    one = client.post("/api/v1/views/decide", json={"metrics": exposition(10.0, {"chat": (0.85, 4)})}).json()
    assert one["calibration"]["engine"]["rollout"]["rows"] == []  # one class: no plan table


def test_a_pasted_sglang_scrape_with_several_classes_shows_the_rollout_plan() -> None:
    """SGLang counts verifications only: the same table, p from tokens per verification at the k its gauge shows."""
    from fastapi.testclient import TestClient

    from app.model.live import rollout_plan as arithmetic
    from app.web.main import app
    from tests.test_rollout_plan import sglang_exposition

    view = TestClient(app).post("/api/v1/views/decide", json={"metrics": sglang_exposition(10.0)}).json()
    rows = [[cell["text"] for cell in row["cells"]] for row in view["calibration"]["engine"]["rollout"]["rows"]]
    assert [row[0] for row in rows] == ["chat", "code"], rows
    assert rows[0][1].startswith("0.850 [") and rows[0][3] == arithmetic.TURN_ON
    assert rows[0][5].startswith("--speculative-algorithm"), rows[0]
    assert rows[1][3] == arithmetic.LEAVE_OFF


def test_the_verdict_says_where_stopping_is_within_the_stated_error(client: TestClient) -> None:
    """The verdict states the batches at which the published error leaves it open whether speculation pays, the
    same range the schedule API gives for the same request."""
    result = view("engine=vllm&regime=roofline")
    verdict = result["verdict"]
    schedule = api(client, result["links"]["config"])["schedule"]  # type: ignore[index]
    assert isinstance(verdict, dict) and isinstance(schedule, dict)
    low = schedule.get("off_range_low")
    assert low is not None and f"batch {low}" in verdict["interval"]
    assert verdict["interval"].startswith("Within the stated error it")


def test_a_report_url_is_fetched_once_for_every_part_of_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The calibration and the rollout table read one scrape: the URL is fetched once per view, so the two tables
    cannot read different scrapes of a server whose counters move."""
    scrape = example_scrape(0.7).replace('model_name="target-model"', 'model_name="a"')
    scrape += example_scrape(0.5).replace('model_name="target-model"', 'model_name="b"')
    fetched: list[str] = []

    def answer(path: str, _query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        fetched.append(path)
        return 200, "text/plain", scrape.encode()

    monkeypatch.setenv("SPECDEC_ALLOW_FETCH", "1")  # the pages read the settings from the environment
    get_settings.cache_clear()
    try:
        with answering(answer) as address, TestClient(create_app(Settings(allow_fetch=True))) as allowed:
            response = allowed.post(VIEW, params={"url": f"http://{address}/metrics"}, json={"metrics": ""})
    finally:
        monkeypatch.delenv("SPECDEC_ALLOW_FETCH")
        get_settings.cache_clear()
    assert response.status_code == 200, response.text
    assert fetched == ["/metrics"], response.json()["calibration"]["engine"]
    assert response.json()["calibration"]["engine"]["fetch"] in (None, "")


def test_a_report_url_is_read_where_the_paste_box_still_holds_the_example(monkeypatch: pytest.MonkeyPatch) -> None:
    """The paste box opens with the example scrape, which the page posts as it is: a URL typed beside it was
    ignored and the example's numbers shown. The example gives way to the URL; a report of the user's does not."""
    served = example_scrape(0.55).replace('model_name="target-model"', 'model_name="served"')

    def answer(path: str, _query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        return 200, "text/plain", served.encode()

    monkeypatch.setenv("SPECDEC_ALLOW_FETCH", "1")
    get_settings.cache_clear()
    try:
        with answering(answer) as address, TestClient(create_app(Settings(allow_fetch=True))) as allowed:
            url = {"url": f"http://{address}/metrics"}
            example = allowed.post(VIEW, params=url, json={"metrics": example_scrape(EXAMPLE_P)}).json()
            own = allowed.post(VIEW, params=url, json={"metrics": example_scrape(0.9)}).json()
    finally:
        monkeypatch.delenv("SPECDEC_ALLOW_FETCH")
        get_settings.cache_clear()
    assert abs(float(example["calibration"]["p"]) - 0.55) < 0.01, example["calibration"]["p"]
    assert example["calibration"]["engine"]["served_model"] == "served"
    assert abs(float(own["calibration"]["p"]) - 0.9) < 0.01  # pasted text of the user's own wins over the URL


def test_drafts_of_several_lengths_are_not_called_a_report_without_per_position_counters(client: TestClient) -> None:
    """llama-server's n-gram drafts vary in length: its per-position counters are read, but the independence test
    is not run; the page said the report had no per-position counters."""
    report = engine_reports.llamacpp_counts(SpecCounts(40, 100, 60, (30, 15, 10, 5)))
    result = client.post(VIEW, json={"metrics": report}).json()["calibration"]
    assert "Drafts of several lengths: independence from token to token is not tested" in result["verdict"]
    sglang = engine_reports.example_report("sglang-metrics", 0.7, 4, 2000, 3)
    result = client.post(VIEW, params={"cycles": 2000}, json={"metrics": sglang}).json()["calibration"]
    assert "No per-position counters" in result["verdict"], result["verdict"]


def test_an_address_that_names_a_report_url_reads_it_from_the_first_paint(monkeypatch: pytest.MonkeyPatch) -> None:
    """/decide?url=... opened (GET) showed the example's numbers under the server's URL until a script posted the
    page again; the address's URL is read as a posted empty paste box would be, once per view. One that cannot be
    read is a note and the example on the page, and a 422 at its label from the JSON twin."""
    served = example_scrape(0.55)
    fetched: list[str] = []

    def answer(path: str, _query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        fetched.append(path)
        return 200, "text/plain", served.encode()

    off = view("url=http%3A%2F%2F10.0.0.1%3A8000%2Fmetrics")["calibration"]
    assert "SPECDEC_ALLOW_FETCH" in off["engine"]["fetch"]  # type: ignore[index]
    monkeypatch.setenv("SPECDEC_ALLOW_FETCH", "1")
    get_settings.cache_clear()
    try:
        with answering(answer) as address:
            url = urlencode({"url": f"http://{address}/metrics"})
            page = view(url)
            twin = view(url, strict=True)
        unreachable = urlencode({"url": f"http://127.0.0.1:{free_port()}/metrics"})  # closed once it is found
        lenient = view(unreachable)
        with pytest.raises(ControlError, match="Report URL"):
            view(unreachable, strict=True)
    finally:
        monkeypatch.delenv("SPECDEC_ALLOW_FETCH")
        get_settings.cache_clear()
    for result in (page, twin):
        assert abs(float(result["calibration"]["p"]) - 0.55) < 0.01  # type: ignore[index]
        assert result["calibration"]["example"] is None  # type: ignore[index]
    assert fetched == ["/metrics", "/metrics"]  # once per view
    notes = " ".join(lenient["notes"])  # type: ignore[arg-type]
    assert "Report URL: " in notes and "showing the example report" in notes
    assert abs(float(lenient["calibration"]["p"]) - EXAMPLE_P) < 0.02  # type: ignore[index]


def test_a_recommended_k_beyond_the_positions_measured_says_it_is_carried_on(client: TestClient) -> None:
    """Four positions measured, the last two alike (a conditional acceptance of 1 carries the profile on): the
    schedule's k = 16 rests on positions never measured, and the recommendation says so; at the example's own
    k it does not."""
    report = engine_reports.llamacpp_counts(SpecCounts(40, 160, 80, (30, 20, 15, 15)))
    result = client.post(VIEW, json={"metrics": report}).json()["calibration"]
    assert int(result["best_k"]) > 4
    assert "That is beyond the 4 positions the report measured" in result["where"], result["where"]
    default = view()["calibration"]
    assert "beyond the" not in default["where"]  # type: ignore[index]
