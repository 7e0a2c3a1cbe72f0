"""The exactness page's view: every number from the model (and the same as the API's), its controls read
leniently for the page and strictly for the JSON twin, and old addresses opened under today's names."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from fastapi.testclient import TestClient

from app.model.arithmetic import bursty, closed_form, ngram, sampling
from app.model.limits import DEFAULT_CHAIN_TOKENS, MAX_CHAIN_K, MAX_NGRAM_TOKENS, MAX_SEED, VOCAB_CHOICES
from app.web.pages.views import exact
from app.web.pages.views.exact import PAGE

View = dict[str, Any]


def view(query: dict[str, str] | None = None, strict: bool = False) -> View:
    return PAGE.view(query or {}, strict=strict)


def api(client: TestClient, link: str) -> dict[str, Any]:
    response = client.get(link)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def cells(table: View) -> list[list[str]]:
    return [[cell["text"] for cell in row["cells"]] for row in table["rows"]]


def p_value(value: float) -> str:
    """The table's p-value, written independently of the code under test."""
    return "< 1e-300" if value == 0 else f"{value:.1e}" if value < 1e-4 else f"{value:.3f}"


def test_defaults_are_what_the_api_returns_for_the_same_requests(client: TestClient) -> None:
    shown = view()
    assert (
        shown["notes"] == [] and shown["links"]["self"] == "/exact" and shown["links"]["json"] == "/api/v1/views/exact"
    )
    rules = api(client, shown["links"]["exact_rule"])
    assert (rules["vocab"], rules["trials"], rules["seed"], rules["draft_distance"]) == (50, 100_000, 0, 1.0)
    first = rules["rules"][0]
    assert shown["rule"]["overlap"] == f"{rules['overlap']:.3f}"
    assert shown["rule"]["acceptance"] == f"{first['acceptance']:.3f} ± {first['acceptance_standard_error']:.3f}"
    assert cells(shown["rule"]["table"]) == [
        [
            {"exact": "Exact rule", "argmax": "Accept on argmax", "resample_target": "Resample from the target"}[
                rule["rule"]
            ],
            f"{rule['acceptance']:.3f} ({rule['acceptance_expected']:.3f})",
            f"{rule['bias']:.3f}",
            p_value(rule["p_value"]),
            "passes" if rule["passes"] else "fails",
        ]
        for rule in rules["rules"]
    ]
    verdicts = [row["cells"][-1]["class"] for row in shown["rule"]["table"]["rows"]]
    assert verdicts == ["verdict verdict-pass", "verdict verdict-fail", "verdict verdict-fail"]
    assert "α = 0.001" in shown["rule"]["test"]

    chain = api(client, shown["links"]["chain"])
    assert (chain["vocab"], chain["k"], chain["tokens"]) == (50, 4, DEFAULT_CHAIN_TOKENS)
    assert shown["chain"]["summary"] == (
        f"{chain['generated']} tokens in {len(chain['cycles'])} cycles "
        f"({chain['mean_tokens_per_cycle']:.2f} per cycle), "
        f"{chain['rollbacks']} rollbacks; acceptance {chain['acceptance']:.3f}, "
        f"mean Σ min(t, q) {chain['mean_overlap']:.3f}."
    )

    run = api(client, shown["links"]["ngram"])
    assert (run["k"], run["tokens"], run["draft_order"], run["target_order"]) == (4, MAX_NGRAM_TOKENS, 3, 6)
    assert shown["ngram"]["acceptance"] == f"{run['acceptance']:.3f} ± {run['acceptance_standard_error']:.3f}"
    assert shown["ngram"]["tokens"] == f"{run['mean_tokens_per_cycle']:.2f} ± {run['tokens_standard_error']:.2f}"
    assert shown["ngram"]["closed_form"] == f"{run['closed_form_tokens']:.2f}"
    assert shown["ngram"]["overlap"] == f"{run['mean_overlap']:.3f}"
    assert shown["ngram"]["corpus"] == f"{run['corpus_characters']:,}"
    assert [span["text"] for span in shown["ngram"]["text"]] == [segment["text"] for segment in run["segments"]]

    markov = api(client, shown["links"]["bursty"])
    low, high = markov["interval_95"]
    assert shown["bursty"]["simulated"] == f"{markov['mean_tokens_per_cycle']:.2f} ± {(high - low) / 2:.2f}"
    assert shown["bursty"]["exact"] == f"{markov['expected_tokens']:.2f}"
    assert shown["bursty"]["iid"] == f"{markov['iid_expected_tokens']:.2f}"
    assert shown["bursty"]["error"] == f"+{markov['iid_error'] * 100:.1f}%"


def test_the_chain_lists_every_cycle_and_says_how_many() -> None:
    shown = view({"chain_k": "6"})
    pair = sampling.make_markov_pair(50, 1.0, 1.0, 1.0, 0)
    chain = sampling.speculative_chain(pair.target_next, pair.draft_next, [0], 6, DEFAULT_CHAIN_TOKENS, 0)
    rows = shown["chain"]["table"]["rows"]
    assert len(rows) == len(chain.cycles) > 0
    assert shown["chain"]["caption"] == f"All {len(chain.cycles)} cycles of the run, in order"
    assert f"in {len(chain.cycles)} cycles" in shown["chain"]["summary"]
    assert shown["chain"]["table"]["columns"] == [
        "Cycle",
        "Sequence length",
        *(f"Draft {i}" for i in range(1, 7)),
        "Target adds",
    ]
    for row, cycle in zip(rows, chain.cycles, strict=True):
        texts = [cell["text"] for cell in row["cells"]]
        kinds = [cell["class"] for cell in row["cells"][2:]]
        assert [text.split(" ")[0] for text in texts[2:]] == [str(token) for token in [*cycle.drafted, cycle.emitted]]
        assert kinds[: cycle.accepted] == ["tok tok-accepted"] * cycle.accepted
        if cycle.bonus:
            assert kinds[-1] == "tok tok-bonus" and "↩" not in texts[1]
        else:
            assert kinds[cycle.accepted] == "tok tok-rejected" and kinds[-1] == "tok tok-correction"
            assert set(kinds[cycle.accepted + 1 : -1]) <= {"tok tok-discarded"}
            # The rollback: one integer moves back to the first rejected position.
            assert f"↩ {cycle.start_length + cycle.accepted} → {cycle.end_length}" in texts[1]


def test_the_text_keeps_what_was_written_and_marks_the_thrown_away_drafts_apart() -> None:
    shown = view()
    run = ngram.run_pair(4, MAX_NGRAM_TOKENS, 0, 0.5, 3, 6)
    spans = shown["ngram"]["text"]
    kept = "".join(span["text"] for span in spans if span["class"] not in ("seg seg-rejected", "seg seg-discarded"))
    assert kept == run.text  # without the dropped drafts the marked text is exactly the output
    assert spans[0] == {"text": "Return the ", "class": "seg seg-prompt"}
    classes = {span["class"] for span in spans}
    assert {"seg seg-accepted", "seg seg-corrected", "seg seg-rejected", "seg seg-discarded"} <= classes


def test_figures_are_built_from_the_model() -> None:
    shown = view({"vocab": "20", "draft_distance": "0"})
    histogram = shown["figures"]["exact-histogram"]
    names = [trace["name"] for trace in histogram["data"]]
    assert names == ["target t", "draft q", "Exact rule", "Accept on argmax", "Resample from the target"]
    pair = sampling.make_pair(20, 1.0, 1.0, 0.0, 0)
    assert histogram["data"][0]["y"] == pytest.approx(sorted(pair.target, reverse=True))
    assert histogram["data"][0]["x"][0] == "#1" and "rest" not in histogram["data"][0]["x"]  # 20 tokens, all shown
    assert shown["rule"]["overlap"] == "1.000" and shown["rule"]["acceptance"] == "1.000 ± 0.000"

    positions = shown["figures"]["ngram-positions"]["data"][0]
    assert positions["x"] == [1, 2, 3, 4] and all(0 <= y <= 1 for y in positions["y"])
    curve = shown["figures"]["bursty-chart"]["data"]
    assert curve[0]["y"][0] == pytest.approx(bursty.expected_tokens(0.75, 6, curve[0]["x"][0]))
    assert curve[1]["y"] == pytest.approx([closed_form.expected_tokens(0.75, 6)] * 2)
    assert curve[2]["x"] == [0.5]


def test_rolling_back_shows_in_the_length_chart() -> None:
    lengths = view({"chain_k": "8", "draft_distance": "3"})["figures"]["chain-length"]["data"][0]["y"]
    assert any(later < earlier for earlier, later in itertools.pairwise(lengths))


def test_old_keys_give_the_same_view_as_todays_names() -> None:
    old = {"xvocab": "20", "xtt": "1.5", "xdt": "0.75", "xdist": "0.5", "xtrials": "10000", "xseed": "7", "chk": "6"}
    old |= {"ngk": "2", "ngtemp": "1.25", "ngdraft": "2", "ngtarget": "5", "ngseed": "9", "rhop": "0.9", "rho": "-0.05"}
    old |= {"rhok": "3"}
    new = {"vocab": "20", "target_temperature": "1.5", "draft_temperature": "0.75", "draft_distance": "0.5"}
    new |= {"trials": "10000", "seed": "7", "chain_k": "6", "ngram_k": "2", "temperature": "1.25", "draft_order": "2"}
    new |= {"target_order": "5", "ngram_seed": "9", "p": "0.9", "rho": "-0.05", "k": "3"}
    assert view(old) == view(new)
    assert dict(parse_qsl(urlsplit(view(old)["links"]["self"]).query)) == new
    assert set(PAGE.legacy_keys) == set(old)


def test_old_addresses_open_here_under_todays_names(client: TestClient) -> None:
    moved = client.get("/?xvocab=20&rhok=3&rho=0.2&k=5&p=0.9", follow_redirects=False)  # k and p: the demo's
    assert moved.status_code == 302 and moved.headers["location"] == "/exact?vocab=20&k=3&rho=0.2"
    renamed = client.get("/exact?chk=6&chain_k=7", follow_redirects=False)
    assert renamed.status_code == 302 and renamed.headers["location"] == "/exact?chain_k=7"
    page = client.get("/exact?chain_k=6")
    assert page.status_code == 200 and 'id="chain_k" name="chain_k"' in page.text
    assert 'id="exact"' not in client.get("/embed").text


@pytest.mark.parametrize(
    ("query", "values", "note"),
    [
        ({"chain_k": "99"}, {"chain_k": MAX_CHAIN_K}, "Chain draft length k 99 from the address is out of range"),
        ({"chain_k": "6.5"}, {"chain_k": 6}, None),  # the nearest integer
        ({"seed": "-1"}, {"seed": 0}, "Seed -1 from the address is out of range; showing 0."),
        ({"ngram_seed": str(MAX_SEED + 1)}, {"ngram_seed": MAX_SEED}, "N-gram seed"),
        ({"target_temperature": "1.23"}, {"target_temperature": 1.25}, None),  # snapped to the slider's step
        (
            {"draft_distance": "nan"},
            {"draft_distance": 1.0},
            "Draft's distance from the target from the address is not a number from 0 to 5; showing 1.00.",
        ),
        (
            {"vocab": "30"},
            {"vocab": "50"},
            "Vocabulary from the address is not one of 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000; showing 50.",
        ),
        (
            {"trials": "12345"},
            {"trials": "100000"},
            "Trials from the address is not one of 10000, 100000, 500000; showing 100000.",
        ),
        ({"draft_order": "6"}, {"draft_order": 5}, "Draft order must be below the target order (6); got 6"),
        ({"p": "0.9", "rho": "-0.9"}, {"rho": -0.11}, "Correlation ρ must be from -0.11 to 1 at acceptance p = 0.90"),
        ({"p": "0.5", "rho": "-1"}, {"rho": -1.0}, None),
        ({"k": "0"}, {"k": 1}, "Bursty draft length k 0"),
    ],
)
def test_the_page_corrects_its_address_and_says_so(
    query: dict[str, str], values: dict[str, Any], note: str | None
) -> None:
    shown = view(query)
    for name, value in values.items():
        assert shown["controls"][name]["value"] == value, name
    if note is None:
        assert shown["notes"] == []
    else:
        assert len(shown["notes"]) == 1 and shown["notes"][0].startswith(note), shown["notes"]


@pytest.mark.parametrize(
    ("query", "name", "label", "message"),
    [
        ({"chain_k": "13"}, "chain_k", "Chain draft length k", "must be an integer from 1 to 12; got 13"),
        ({"seed": "1.5"}, "seed", "Seed", "must be an integer from 0 to"),
        ({"trials": "12345"}, "trials", "Trials", "must be one of 10000, 100000, 500000"),
        ({"vocab": "abc"}, "vocab", "Vocabulary", "must be one of " + ", ".join(map(str, VOCAB_CHOICES))),
        ({"temperature": "inf"}, "temperature", "N-gram temperature (both models)", "must be a number from 0.05 to 5"),
        ({"draft_order": "6"}, "draft_order", "Draft order", "must be below the target order (6); got 6"),
        ({"target_order": "3", "draft_order": "3"}, "draft_order", "Draft order", "must be below the target order (3)"),
        ({"rho": "-0.5"}, "rho", "Correlation ρ", "must be from -0.33 to 1 at acceptance p = 0.75; got -0.5"),
        ({"p": "1", "rho": "-0.1"}, "rho", "Correlation ρ", "must be from 0.00 to 1 at acceptance p = 1.00"),
    ],
)
def test_the_json_twin_refuses_what_the_page_would_correct_naming_the_label(
    client: TestClient, query: dict[str, str], name: str, label: str, message: str
) -> None:
    response = client.get("/api/v1/views/exact", params=query)
    assert response.status_code == 422, response.text
    [detail] = response.json()["detail"]
    assert detail["loc"] == ["query", name] and detail["label"] == label
    assert detail["msg"].startswith(f"{label} {message}"), detail["msg"]


def test_the_json_twin_is_the_view_the_page_was_painted_from(client: TestClient) -> None:
    query = {"vocab": "20", "chain_k": "6", "p": "0.9", "rho": "0.3", "k": "3", "draft_order": "2"}
    twin = client.get("/api/v1/views/exact", params=query).json()
    assert twin == json_round_trip(view(query))
    page = client.get("/exact", params=query).text
    assert f'id="exact-overlap">{twin["rule"]["overlap"]}<' in page
    assert f'id="rho-exact">{twin["bursty"]["exact"]}<' in page
    assert f'id="chain-summary">{twin["chain"]["summary"]}<' in page
    assert 'id="rho" name="rho"\n         min="-0.11" data-min="bursty.rho_low"' in page
    assert 'id="draft_order" name="draft_order"' in page and 'max="5" data-max="ngram.draft_max"' in page
    assert twin["bursty"]["rho_low"] == -0.11 and twin["ngram"]["target_min"] == 3


def json_round_trip(value: View) -> View:
    result: View = json.loads(json.dumps(value))
    return result


def test_the_slider_lower_end_of_rho_follows_p() -> None:
    for p in (0.05, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0):
        low = exact.rho_low(p)
        bound = bursty.rho_bounds(p)[0]
        assert bound - 1e-12 <= low < bound + exact.RHO_STEP and math.isclose(low * 100, round(low * 100))


def test_hostile_values_never_break_the_page_nor_appear_raw(client: TestClient) -> None:
    hostile = ["<script>alert(1)</script>", '"><svg onload=alert(1)>', "%00", "1e308", "\ufeff7\u3000", "+-1"]
    for value in hostile:
        query = {control.name: value for control in exact.CONTROLS}
        shown = view(query)
        assert shown["controls"]["chain_k"]["value"] in (1, 12, 4) and len(shown["notes"]) >= 10
        response = client.get("/exact", params=query)
        assert response.status_code == 200
        assert "<script>alert" not in response.text and "<svg onload" not in response.text
        assert client.get("/api/v1/views/exact", params=query).status_code == 422


def test_a_change_of_one_panel_recomputes_only_that_panel() -> None:
    view({"trials": "500000"})
    before = exact._rules.cache_info().hits
    shown = view({"trials": "500000", "rho": "0.2"})
    assert exact._rules.cache_info().hits == before + 1
    assert "500,000 trials" in shown["rule"]["test"]
