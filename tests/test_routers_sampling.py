from __future__ import annotations

import itertools
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.model import bursty, closed_form, sampling
from app.web.api.routes import sampling as router
from app.web.pages.page_format import js_number, js_string


def get(client: TestClient, path: str, **params: Any) -> dict[str, Any]:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def refused(client: TestClient, path: str, name: str, **params: Any) -> str:
    response = client.get(path, params=params)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail[0]["loc"] == ["query", name]
    message: str = detail[0]["msg"]
    assert message.startswith(name)
    return message


def test_exact_rule_passes_and_wrong_rules_fail(client: TestClient) -> None:
    body = get(client, "/api/v1/exact-rule", vocab=100, trials=100_000, seed=3)
    pair = sampling.make_pair(100, 1.0, 1.0, 1.0, seed=3)
    assert body["overlap"] == pytest.approx(pair.overlap)
    assert body["total_variation"] == pytest.approx(1.0 - pair.overlap)
    rules = {rule["rule"]: rule for rule in body["rules"]}
    assert list(rules) == ["exact", "argmax", "resample_target"]
    assert rules["exact"]["passes"] and rules["exact"]["bias"] == 0.0
    assert not rules["argmax"]["passes"] and not rules["resample_target"]["passes"]
    exact = rules["exact"]
    assert abs(exact["acceptance"] - body["overlap"]) < 3 * exact["acceptance_standard_error"]
    assert len(body["histogram_tokens"]) == len(body["target"]) == len(exact["histogram"]) == 30
    assert body["target"] == sorted(body["target"], reverse=True)
    assert sum(body["target"]) + body["target_rest"] == pytest.approx(1.0)
    assert sum(exact["histogram"]) + exact["histogram_rest"] == pytest.approx(1.0)


def test_exact_rule_is_reproducible(client: TestClient) -> None:
    params = {"vocab": 40, "trials": 5_000, "seed": 9}
    assert get(client, "/api/v1/exact-rule", **params) == get(client, "/api/v1/exact-rule", **params)


@pytest.mark.parametrize(
    ("name", "value", "bounds"),
    [
        ("vocab", 1, "from 2 to 2000"),
        ("vocab", router.MAX_VOCAB + 1, "from 2 to 2000"),
        ("trials", router.MAX_TRIALS + 1, "from 1000 to 500000"),
        ("trials", "1e9", "from 1000 to 500000"),
        ("target_temperature", 0, "from 0.05 to 5"),
        ("draft_temperature", "inf", "from 0.05 to 5"),
        ("draft_distance", "nan", "from 0 to 5"),
        ("histogram_tokens", 0, "from 1 to 200"),
    ],
)
def test_exact_rule_bounds(client: TestClient, name: str, value: object, bounds: str) -> None:
    assert bounds in refused(client, "/api/v1/exact-rule", name, **{name: value})


def test_chain_rolls_back_one_integer(client: TestClient) -> None:
    body = get(client, "/api/v1/chain", vocab=30, k=5, tokens=80, seed=2, draft_distance=1.5)
    assert body["generated"] >= 80
    assert body["rollbacks"] > 0
    assert len(body["sequence"]) == body["cycles"][-1]["end_length"]
    for step in body["steps"]:
        if step["action"] == "rollback":
            cycle = body["cycles"][step["cycle"]]
            assert step["length"] == cycle["start_length"] + cycle["accepted"] < cycle["start_length"] + body["k"]
    lengths = [step["length"] for step in body["steps"]]
    assert any(later < earlier for earlier, later in itertools.pairwise(lengths))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("vocab", router.MAX_CHAIN_VOCAB + 1),
        ("k", 0),
        ("k", router.MAX_CHAIN_K + 1),
        ("tokens", router.MAX_CHAIN_TOKENS + 1),
    ],
)
def test_chain_bounds(client: TestClient, name: str, value: int) -> None:
    refused(client, "/api/v1/chain", name, **{name: value})


def test_ngram_pair_against_the_closed_form(client: TestClient) -> None:
    body = get(client, "/api/v1/ngram", k=4, tokens=400, seed=1)
    assert body["corpus_characters"] > 100_000
    assert body["generated"] >= 400
    assert body["closed_form_tokens"] == pytest.approx(closed_form.expected_tokens(body["acceptance"], 4))
    assert sum(body["histogram"]) == body["cycles"] == body["per_position"][0]["verified"]
    assert sum(body["histogram_iid"]) == pytest.approx(body["cycles"])
    assert len(body["per_position"]) == 4
    kept = "".join(s["text"] for s in body["segments"] if s["kind"] in ("prompt", "accepted", "corrected", "bonus"))
    assert kept == body["text"]
    assert body["text"].startswith("Return the ")
    assert get(client, "/api/v1/ngram", k=4, tokens=400, seed=1) == body


def test_ngram_orders_must_differ_and_the_error_names_what_was_sent(client: TestClient) -> None:
    assert "below target_order" in refused(client, "/api/v1/ngram", "draft_order", draft_order=6, target_order=5)
    assert "above draft_order" in refused(client, "/api/v1/ngram", "target_order", target_order=3)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("k", router.MAX_NGRAM_K + 1),
        ("tokens", router.MAX_NGRAM_TOKENS + 1),
        ("draft_order", 0),
        ("target_order", 8),
        ("temperature", -1),
        ("prompt", "caf\u00e9"),
        ("prompt", "x" * (router.MAX_PROMPT + 1)),
    ],
)
def test_ngram_bounds(client: TestClient, name: str, value: object) -> None:
    refused(client, "/api/v1/ngram", name, **{name: value})


def test_bursty_simulation_against_exact_and_iid(client: TestClient) -> None:
    body = get(client, "/api/v1/bursty", p=0.75, k=6, rho=0.5, cycles=400_000, seed=2)
    low, high = body["interval_95"]
    assert low <= body["expected_tokens"] <= high
    assert body["expected_tokens"] == pytest.approx(bursty.expected_tokens(0.75, 6, 0.5))
    assert body["iid_expected_tokens"] == closed_form.expected_tokens(0.75, 6)
    assert not low <= body["iid_expected_tokens"] <= high  # the i.i.d. closed form is visibly off
    assert body["iid_error"] > 0.05
    assert body["measured_autocorrelation"] == pytest.approx(0.5, abs=0.02)
    assert body["rho_min"] == pytest.approx(-1 / 3)
    assert body["curve"][0]["rho"] == pytest.approx(-1 / 3) and body["curve"][-1]["rho"] == 1.0
    assert sum(body["histogram"]) == 400_000


def test_bursty_at_rho_zero_is_the_closed_form(client: TestClient) -> None:
    body = get(client, "/api/v1/bursty", p=0.6, k=4, rho=0.0, cycles=100_000)
    assert body["expected_tokens"] == body["iid_expected_tokens"] == closed_form.expected_tokens(0.6, 4)


@pytest.mark.parametrize("path", ["/api/v1/bursty", "/api/v1/simulate", "/api/v1/run"])
def test_rho_outside_what_p_allows_names_its_bounds(client: TestClient, path: str) -> None:
    message = refused(client, path, "rho", p=0.75, rho=-0.5)
    assert "-0.333333 to 1 at p = 0.75" in message
    assert "from -1 to 1" in refused(client, path, "rho", rho=1.5)


def test_simulate_and_run_without_rho_are_unchanged(client: TestClient) -> None:
    params = {"p": 0.7, "k": 5, "c": 0.1, "seed": 4}
    plain = get(client, "/api/v1/simulate", cycles=20_000, **params)
    assert plain == get(client, "/api/v1/simulate", cycles=20_000, rho=0, **params)
    assert plain["rho"] == 0.0 and plain["markov_expected_tokens"] is None
    run = get(client, "/api/v1/run", tokens=200, **params)
    assert run == get(client, "/api/v1/run", tokens=200, rho=0.0, **params)


def test_simulate_with_rho_is_held_against_both_models(client: TestClient) -> None:
    body = get(client, "/api/v1/simulate", p=0.75, k=6, c=0.15, cycles=500_000, seed=1, rho=0.5)
    low, high = body["interval_95"]
    assert body["markov_expected_tokens"] == pytest.approx(bursty.expected_tokens(0.75, 6, 0.5))
    assert low <= body["markov_expected_tokens"] <= high
    assert body["expected_tokens"] == closed_form.expected_tokens(0.75, 6)
    assert high < body["expected_tokens"]


def test_run_with_rho_comes_in_runs(client: TestClient) -> None:
    bursty_run = get(client, "/api/v1/run", p=0.5, k=4, tokens=3_000, seed=1, rho=0.9)
    accepted = [cycle["accepted"] for cycle in bursty_run["cycles"]]
    assert sum(accepted) + len(accepted) == bursty_run["tokens"] >= 3_000
    # With rho = 0.9 a cycle that accepted everything is usually followed by another.
    full_after_full = sum(1 for a, b in itertools.pairwise(accepted) if a == 4 and b == 4)
    full = sum(1 for a in accepted[:-1] if a == 4)
    assert full_after_full / full > 0.5 > 0.5**4


# --- the page section's first paint (page_context) ---------------------------------------------------


# The URL keys static/js/exact.js reads.
SECTION_KEYS: tuple[str, ...] = ("xvocab", "xtt", "xdt", "xdist", "xtrials", "xseed", "chk", "ngk", "ngtemp")
SECTION_KEYS += ("ngdraft", "ngtarget", "ngseed", "rho", "rhop", "rhok")


def exact_section(client: TestClient, query: str) -> str:
    response = client.get("/" + query)
    assert response.status_code == 200
    html = response.text
    start = html.index('<section id="exact"')
    return html[start : html.index("</section>", start)]


def rule_rows(body: dict[str, Any]) -> list[tuple[str, str, str, str, bool]]:
    """What the rule table shows for an /exact-rule body, formatted independently of the code under test."""

    def p_value(value: float) -> str:
        return f"{value:.1e}".replace("e-0", "e-").replace("e+00", "e+0") if value < 1e-4 else f"{value:.3f}"

    return [
        (
            rule["rule"],
            f"{rule['acceptance']:.3f} ({rule['acceptance_expected']:.3f})",
            f"{rule['bias']:.3f}",
            p_value(rule["p_value"]),
            rule["passes"],
        )
        for rule in body["rules"]
    ]


def shown_rows(context: dict[str, Any]) -> list[tuple[str, str, str, str, bool]]:
    return [(row.rule, row.acceptance, row.bias, row.p_value, row.passes) for row in context["exact_rule"].rules]


def test_page_context_defaults_are_what_the_api_returns_for_the_default_requests(client: TestClient) -> None:
    context = router.page_context({})
    state = context["state"]
    assert (state.vocab, state.target_temperature, state.draft_temperature, state.draft_distance) == (50, 1, 1, 1)
    assert (state.trials, state.seed, state.chain_k, state.rho_p, state.rho_k, state.rho) == (
        100_000,
        0,
        4,
        0.75,
        6,
        0.5,
    )
    assert (state.ngram_k, state.ngram_temperature, state.ngram_draft_order, state.ngram_target_order) == (4, 0.5, 3, 6)
    assert context["controls"]["exact-vocab"] == router.ControlView("4", "50")
    assert context["controls"]["exact-distance"] == router.ControlView("1", "1.00")
    assert context["rho_min"] == "-0.33"

    body = get(client, "/api/v1/exact-rule", vocab=50, trials=100_000, seed=0, histogram_tokens=30)
    exact = context["exact_rule"]
    assert exact.overlap == f"{body['overlap']:.3f}"
    rules = body["rules"]
    assert exact.acceptance == f"{rules[0]['acceptance']:.3f} ± {rules[0]['acceptance_standard_error']:.3f}"
    assert shown_rows(context) == rule_rows(body)
    assert [row.passes for row in exact.rules] == [True, False, False]

    chain = get(client, "/api/v1/chain", vocab=50, k=4, tokens=40, seed=0)
    assert context["chain"].summary == (
        f"{chain['generated']} tokens in {len(chain['cycles'])} cycles "
        f"({chain['mean_tokens_per_cycle']:.2f} per cycle), "
        f"{chain['rollbacks']} rollbacks; acceptance {chain['acceptance']:.3f}, "
        f"mean Σ min(p, q) {chain['mean_overlap']:.3f}."
    )
    assert len(context["chain"].cycles) == min(len(chain["cycles"]), router.PAGE_CYCLES_LISTED)
    for shown, cycle in zip(context["chain"].cycles, chain["cycles"], strict=False):
        assert [token.text for token in shown.tokens] == [str(t) for t in [*cycle["drafted"], cycle["emitted"]]]
        assert shown.tokens[-1].kind == ("bonus" if cycle["bonus"] else "correction")
        assert shown.lengths.startswith(f"length {cycle['start_length']} → {cycle['start_length'] + 4}")

    markov = get(client, "/api/v1/bursty", p=0.75, k=6, rho=0.5)
    assert context["bursty"] == router.BurstyView(
        exact=f"{markov['expected_tokens']:.2f}",
        iid=f"{markov['iid_expected_tokens']:.2f}",
        error=f"+{markov['iid_error'] * 100:.1f}%",
    )


def test_page_context_follows_a_valid_url_state(client: TestClient) -> None:
    query = {
        "xvocab": "20",
        "xtt": "1.5",
        "xdt": "0.75",
        "xdist": "0.5",
        "xtrials": "10000",
        "xseed": "7",
        "chk": "6",
        "ngk": "2",
        "ngtemp": "1.25",
        "ngdraft": "2",
        "ngtarget": "5",
        "ngseed": "9",
        "rhop": "0.9",
        "rho": "-0.05",
        "rhok": "3",
    }
    context = router.page_context(query)
    controls = context["controls"]
    assert controls["exact-vocab"] == router.ControlView("3", "20")
    assert controls["exact-target-temp"] == router.ControlView("1.5", "1.50")
    assert controls["exact-draft-temp"] == router.ControlView("0.75", "0.75")
    assert controls["exact-seed"].value == "7" and controls["chain-k"].value == "6"
    assert [controls[name].value for name in ("ngram-k", "ngram-temperature", "ngram-draft", "ngram-target")] == [
        "2",
        "1.25",
        "2",
        "5",
    ]
    assert controls["ngram-seed"].value == "9"
    assert (controls["rho-p"].label, controls["rho"].label, controls["rho-k"].label) == ("0.90", "-0.05", "3")
    assert context["rho_min"] == "-0.11"
    assert context["trials"] == 10_000

    params = {"vocab": 20, "target_temperature": 1.5, "draft_temperature": 0.75, "draft_distance": 0.5, "seed": 7}
    body = get(client, "/api/v1/exact-rule", **params, trials=10_000, histogram_tokens=30)
    assert context["exact_rule"].overlap == f"{body['overlap']:.3f}"
    assert shown_rows(context) == rule_rows(body)
    chain = get(client, "/api/v1/chain", **params, k=6, tokens=40)
    assert context["chain"].summary.startswith(f"{chain['generated']} tokens in {len(chain['cycles'])} cycles")
    markov = get(client, "/api/v1/bursty", p=0.9, k=3, rho=-0.05)
    assert context["bursty"].exact == f"{markov['expected_tokens']:.2f}"
    assert context["bursty"].error == f"−{abs(markov['iid_error']) * 100:.1f}%"

    section = exact_section(client, "?" + "&".join(f"{name}={value}" for name, value in query.items()))
    assert '<option value="10000" selected>' in section
    assert 'id="rho" min="-0.11" max="1" step="0.01" value="-0.05"' in section
    assert f'id="exact-overlap">{body["overlap"]:.3f}<' in section
    assert f'id="rho-exact">{markov["expected_tokens"]:.2f}<' in section


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # Values the script would also take, the way it takes them: Number() syntax, the first of repeated keys,
        # ranges snapped to their step (halves up), nearest vocabulary on a log scale.
        ({"xvocab": "0x14"}, {"vocab": 20}),
        ({"xvocab": "30"}, {"vocab": 20}),
        ({"xvocab": "35"}, {"vocab": 50}),
        ({"xtt": " 1.225\t"}, {"target_temperature": 1.25}),
        ({"xdist": "3.98"}, {"draft_distance": 4.0}),
        ({"xtrials": "1e4"}, {"trials": 10_000}),
        ({"xseed": "17.9"}, {"seed": 17}),
        ({"chk": "6.5"}, {"chain_k": 7}),
        ({"ngdraft": "6", "ngtarget": "6"}, {"ngram_draft_order": 5, "ngram_target_order": 6}),
        ({"rhop": "0.5", "rho": "-1"}, {"rho": -1.0}),
        ({"rhop": "0.9", "rho": "-0.9"}, {"rho": -0.11, "rho_min": -0.11}),
        # Malformed, hostile or out of range: that key's default.
        ({"xvocab": "<script>alert(1)</script>"}, {"vocab": 50}),
        ({"xvocab": "1"}, {"vocab": 50}),
        ({"xvocab": "2001"}, {"vocab": 50}),
        ({"xvocab": "1_000"}, {"vocab": 50}),
        ({"xvocab": "\u0663"}, {"vocab": 50}),
        ({"xtt": "nan", "xdt": "Infinity"}, {"target_temperature": 1.0, "draft_temperature": 1.0}),
        ({"xtt": "inf", "xdt": "-0.5"}, {"target_temperature": 1.0, "draft_temperature": 1.0}),
        ({"xdist": "0x" + "f" * 400}, {"draft_distance": 1.0}),
        ({"xdist": "1e999"}, {"draft_distance": 1.0}),
        ({"xtrials": "12345"}, {"trials": 100_000}),
        ({"xtrials": "' OR 1=1 --"}, {"trials": 100_000}),
        ({"xseed": "-1"}, {"seed": 0}),
        ({"xseed": "4294967296"}, {"seed": 0}),
        ({"chk": "0"}, {"chain_k": 4}),
        ({"chk": "13"}, {"chain_k": 4}),
        ({"chk": ""}, {"chain_k": 4}),
        ({"chk": "\u2028"}, {"chain_k": 4}),
        ({"ngk": "9", "ngtemp": "0.1", "ngseed": "x"}, {"ngram_k": 4, "ngram_temperature": 0.5, "ngram_seed": 0}),
        ({"rhop": "1", "rhok": "17"}, {"rho_p": 0.75, "rho_k": 6}),
        ({"rho": "1.5"}, {"rho": 0.5}),
        ({"rho": '"><img src=x onerror=alert(1)>'}, {"rho": 0.5}),
        ({"rhop": "0.75", "rho": "-0.9"}, {"rho": -0.33}),
    ],
)
def test_page_state_takes_the_url_as_the_script_does(query: dict[str, str], expected: dict[str, float]) -> None:
    state = router.section_state(query)
    for name, value in expected.items():
        assert getattr(state, name) == value, name


def test_repeated_keys_take_the_first_value_like_url_search_params(client: TestClient) -> None:
    section = exact_section(client, "?xvocab=20&xvocab=500&chk=2&chk=9")
    assert 'id="exact-vocab-value" for="exact-vocab">20<' in section
    assert 'id="chain-k-value" for="chain-k">2<' in section


@pytest.mark.parametrize(
    "value",
    [
        "<script>alert(1)</script>",
        '"><svg onload=alert(1)>',
        "javascript:alert(1)",
        "%00",
        "1e308",
        "-0",
        "\ufeff7\u3000",
        "ä" * 10,
        "0b102",
        "+-1",
    ],
)
def test_hostile_values_never_raise_nor_appear_raw(client: TestClient, value: str) -> None:
    query = dict.fromkeys(SECTION_KEYS, value)
    context = router.page_context(query)
    assert context["exact_rule"] is not None and context["chain"] is not None and context["bursty"] is not None
    response = client.get("/", params=query)
    assert response.status_code == 200
    if len(value) > 3:
        assert value not in response.text
    assert "<script>alert" not in response.text and "<svg onload" not in response.text


def test_helpers_format_numbers_as_javascript_does() -> None:
    # Number() syntax
    assert js_number("0x10") == 16 and js_number("0b101") == 5 and js_number("0o17") == 15
    assert js_number("\u00a0 .5e1 \n") == 5.0 and js_number("-Infinity") == float("-inf")
    for text in ("1_000", "inf", "nan", "-0x10", "1.2.3", "\u0663", "\x1c1"):
        assert js_number(text) != js_number(text), text  # NaN
    # toFixed rounds the exact double, halves away from zero; toExponential(1) writes e-5, not e-05
    assert router._fixed(0.0625, 3) == "0.063" and router._fixed(-0.0625, 3) == "-0.063"
    assert router._fixed(1.005, 2) == "1.00" and router._fixed(-0.0, 3) == "0.000" and router._fixed(None) == "n/a"
    assert router._fixed(float("nan")) == "n/a"
    assert router._exponential(1.25e-5) == "1.3e-5" and router._exponential(9.96e-5) == "1.0e-4"
    assert router._exponential(0.0) == "0.0e+0"
    assert js_string(1.0) == "1" and js_string(-0.0) == "0" and js_string(0.35) == "0.35"


def test_a_slow_exact_rule_is_left_to_the_script_with_a_link_to_its_numbers(client: TestClient) -> None:
    assert router.exact_rule_is_cheap(50, 100_000) and router.exact_rule_is_cheap(2_000, 10_000)
    assert not router.exact_rule_is_cheap(100, 100_000) and not router.exact_rule_is_cheap(2, 500_000)
    context = router.page_context({"xtrials": "500000", "xseed": "3"})
    assert context["exact_rule"] is None
    assert context["chain"] is not None and context["bursty"] is not None
    section = exact_section(client, "?xtrials=500000&xseed=3")
    assert 'id="exact-acceptance">…<' in section
    assert '<tr class="pending"><td colspan="5">Computing… 500,000 trials' in section
    link = context["exact_rule_json"]
    assert f'href="{link.replace("&", "&amp;")}"' in section
    body = client.get(link).json()
    assert (body["trials"], body["seed"], body["vocab"], len(body["histogram_tokens"])) == (500_000, 3, 50, 30)


def test_a_failing_panel_is_left_to_the_script(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(router, "build_chain", broken)
    router._chain_view.cache_clear()
    context = router.page_context({"chk": "11"})
    assert context["chain"] is None and context["exact_rule"] is not None
    section = exact_section(client, "?chk=11")
    assert 'id="chain-summary" aria-live="polite"></p>' in section
    assert 'id="chain-k-value" for="chain-k">11<' in section


def test_embed_page_leaves_the_sections_out(client: TestClient) -> None:
    assert 'id="exact"' not in client.get("/embed").text
