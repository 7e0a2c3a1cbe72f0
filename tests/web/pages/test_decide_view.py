"""The decide page's view: the numbers the API gives for the same question, read from the page's controls."""

from __future__ import annotations

import json
from urllib.parse import urlencode, urlsplit

import pytest
from fastapi.testclient import TestClient
from starlette.datastructures import QueryParams

from app.model import calibration, closed_form, draft_sources
from app.model.limits import DEFAULT_C
from app.web.pages.controls import ControlError
from app.web.pages.views import decide
from app.web.pages.views.decide import EXAMPLE_DRAFTS, EXAMPLE_K, EXAMPLE_P, EXAMPLE_SEED, PAGE

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
    assert cal["best_k"] == str(expected["best_k"])
    assert cal["best_speedup"] == f"{expected['best_speedup']:.2f}×"
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
    assert "A chain never yields more than 2.50 tokens per step, a binary tree 5.00" in result["trees"]["summary"]
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
    assert result["calibration"]["best_k"] == str(expected["best_k"])
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
        ({"metrics": "hello world"}, "vLLM /metrics scrape", "not a Prometheus text exposition"),
        ({"metrics": "process_cpu_seconds_total 3\n"}, "vLLM /metrics scrape", "no vLLM spec-decode counters"),
        ({"metrics": ""}, "vLLM /metrics scrape", "empty"),
        ({"metrics": "x" * (calibration.MAX_EXPOSITION_BYTES + 1)}, "vLLM /metrics scrape", "at most 1000000"),
        (
            {"metrics": calibration.example_exposition(0.5, 4), "baseline": "hello world"},
            "Earlier /metrics scrape",
            "not a Prometheus text exposition",
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
