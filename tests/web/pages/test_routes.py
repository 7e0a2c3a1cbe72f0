from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.datastructures import QueryParams

from app.model.arithmetic import closed_form, monte_carlo
from app.web.pages.page import Page
from app.web.pages.routes import VIEWS
from app.web.pages.views.demo import readouts


@pytest.mark.parametrize(
    ("query", "location"),
    [
        ("rg_hw=a100-sxm&rg_p=0.7", "/batch?hw=a100-sxm&p=0.7"),
        ("xtrials=500000", "/exact?trials=500000"),  # a rebuilt page opens under its controls' names
        ("ngk=3&k=4", "/exact?ngram_k=3"),  # k was the demo's, not the page's
        ("cal_mode=rate&cal_rate=0.6", "/decide?mode=rate&rate=0.6"),
        ("tree_budget=32", "/decide?budget=32"),
    ],
)
def test_an_address_of_the_one_page_version_opens_its_section_s_page(
    client: TestClient, query: str, location: str
) -> None:
    response = client.get(f"/?{query}", follow_redirects=False)
    assert response.status_code == 302
    assert response.headers["location"] == location


@pytest.mark.parametrize("query", ["", "k=4&p=0.8", "embed=1", "unknown=1"])
def test_the_demo_s_own_addresses_stay(client: TestClient, query: str) -> None:
    assert client.get(f"/?{query}", follow_redirects=False).status_code == 200


def test_the_json_twin_is_the_view_the_page_was_painted_from(client: TestClient) -> None:
    view = client.get("/api/v1/views/demo", params={"k": 4, "p": 0.8, "c": 0.1}).json()
    assert view["page"] == "demo"
    assert view["readouts"] == {**view["readouts"], **readouts(0.8, 4, 0.1)}
    assert view["readouts"]["speedup"] == f"{closed_form.speedup(0.8, 4, 0.1):.2f}×"
    html = client.get("/", params={"k": 4, "p": 0.8, "c": 0.1}).text
    for key in ("tokens", "cost", "speedup", "best_k"):
        assert f'data-text="readouts.{key}"' in html
        assert f">{view['readouts'][key]}</span>" in html
    assert view["links"] == {**view["links"], "self": "/?k=4&p=0.8&c=0.1", "json": "/api/v1/views/demo?k=4&p=0.8&c=0.1"}


def test_the_json_twin_refuses_what_the_page_would_correct(client: TestClient) -> None:
    response = client.get("/api/v1/views/demo", params={"k": 20})
    assert response.status_code == 422
    detail = response.json()["detail"][0]
    assert detail["label"] == "Draft length k"
    assert detail["msg"] == "Draft length k must be an integer from 0 to 16; got 20"
    assert client.get("/api/v1/views/nothing").status_code == 404


@pytest.mark.parametrize("parts", ["readouts,curve", "run", "nonsense"])
def test_embed_parts(client: TestClient, parts: str) -> None:
    html = client.get("/embed", params={"parts": parts}).text
    chosen = {"readouts,curve": {"readouts", "curve"}, "run": {"run"}}.get(
        parts, {"controls", "readouts", "curve", "run"}
    )
    assert ('id="tokens"' in html) is ("readouts" in chosen)
    assert ('id="curve"' in html) is ("curve" in chosen)
    assert ('id="run-tokens"' in html) is ("run" in chosen)
    assert ('id="k"' in html) is ("controls" in chosen)
    assert "Open in specdec-lab" in html and "site-header" not in html


def test_best_k_does_not_depend_on_the_chart_s_range(client: TestClient) -> None:
    narrow = client.get("/api/v1/views/demo", params={"k": 4, "p": 0.99, "c": 0.15}).json()
    wide = client.get("/api/v1/views/demo", params={"k": 16, "p": 0.99, "c": 0.15}).json()
    best, _ = closed_form.best_k(0.99, 0.15, 64)
    assert best > 16
    assert narrow["readouts"]["best_k"] == wide["readouts"]["best_k"] == str(best)
    curve = narrow["figures"]["curve"]
    assert max(curve["data"][2]["x"]) >= best, "the chart widens to show the best k"
    assert "searched over 1 to 64" in narrow["readouts"]["best_limit"]


def test_the_search_limit_is_said_when_it_is_reached(client: TestClient) -> None:
    view = client.get("/api/v1/views/demo", params={"p": 1, "c": 0}).json()
    assert view["readouts"]["best_k"] == "≥ 64"
    assert "still gains at 64" in view["readouts"]["best_limit"]


def test_one_number_for_the_largest_useful_draft_cost_and_the_engine_s_rate(client: TestClient) -> None:
    html = client.get("/", params={"k": 5, "p": 0.7}).text
    assert 'id="max-cost"' not in html
    assert "largest draft cost that breaks even" in html
    assert closed_form.max_draft_cost(0.7, 5) == pytest.approx(closed_form.draft_acceptance_rate(0.7, 5))


@pytest.mark.parametrize(
    ("parts", "named", "guess", "shown"),
    [
        ("foo", "foo", None, {"controls", "readouts", "curve", "run"}),
        ("readout,curve", "readout", "readouts", {"curve"}),
        ("run,histgram", "histgram", "histogram", {"run"}),
    ],
)
def test_an_unknown_part_is_named(
    client: TestClient, parts: str, named: str, guess: str | None, shown: set[str]
) -> None:
    html = client.get("/embed", params={"parts": parts}).text
    note = html.split('<ul class="notes"')[1].split("</ul>")[0]
    assert f"no part named `{named}`" in note
    assert (f"did you mean `{guess}`?" in note) is (guess is not None)
    assert "the parts are controls, readouts, curve, run, histogram" in note
    assert ('id="curve"' in html) is ("curve" in shown) and ('id="run-tokens"' in html) is ("run" in shown)
    assert ('id="k"' in html) is ("controls" in shown) and ('id="histogram"' in html) is ("histogram" in shown)
    refused = client.get("/api/v1/views/embed", params={"parts": parts})
    assert refused.status_code == 422
    detail = refused.json()["detail"][0]
    assert detail["loc"] == ["query", "parts"] and detail["label"] == "Parts"
    assert detail["msg"].startswith(f"Parts: no part named `{named}`")


def test_known_parts_get_no_note(client: TestClient) -> None:
    html = client.get("/embed", params={"parts": "readouts,curve"}).text
    assert '<ul class="notes" data-list="notes" hidden>' in html


@pytest.mark.parametrize(
    ("parts", "simulations", "runs"),
    [("curve", 0, 0), ("readouts,curve", 0, 0), ("run", 0, 1), ("histogram", 1, 0), (None, 0, 1)],
)
def test_an_embed_computes_only_what_it_shows(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, parts: str | None, simulations: int, runs: int
) -> None:
    calls = {"simulate": 0, "run_trace": 0}
    for name in calls:
        original = getattr(monte_carlo, name)

        def counted(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(monte_carlo, name, counted)
    query = {} if parts is None else {"parts": parts}
    assert client.get("/embed", params=query).status_code == 200
    assert calls == {"simulate": simulations, "run_trace": runs}
    view = client.get("/api/v1/views/embed", params=query).json()
    assert calls == {"simulate": 2 * simulations, "run_trace": 2 * runs}, "and its JSON twin the same"
    assert set(view["figures"]) == {"curve", "run", "histogram"} & set(view["parts"])
    assert ("simulation" in view["readouts"]) is ("histogram" in view["parts"])


def test_the_demo_s_json_twin_is_still_whole(client: TestClient) -> None:
    view = client.get("/api/v1/views/demo").json()
    assert set(view["figures"]) == {"curve", "run", "histogram"}
    assert view["parts"] == ["controls", "readouts", "curve", "run", "histogram"]
    assert view["run"]["start"].endswith(f"(cycle 0 of {len(view['run']['events'])})")
    assert [len(kinds) for kinds in view["run"]["strip"]] == [len(kinds) for kinds in view["run"]["events"]]


def test_an_unknown_page_is_a_page_with_the_nav(client: TestClient) -> None:
    response = client.get("/no-such-page")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    assert '<nav aria-label="Pages"' in html and "There is no page at /no-such-page" in html
    for path in ("/", "/batch", "/exact", "/decide", "/docs"):
        assert f'href="{path}"' in html
    assert client.head("/no-such-page").status_code == 404


@pytest.mark.parametrize("path", ["/api/v1/no-such-operation", "/api/nothing", "/api/v1/views/nothing"])
def test_an_unknown_api_path_keeps_answering_json(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert "detail" in response.json()


def test_the_glossary_lists_every_term(client: TestClient) -> None:
    html = client.get("/glossary").text
    for anchor, words in [
        ("v-k", "v(k)"),
        ("tau", "τ (tau)"),
        ("c-ops", "c_ops"),
        ("sps", "SpS"),
        ("pld", "PLD"),
        ("wilson", "Wilson score"),
        ("chi-square", "χ² on 4 df"),
        ("positional", "Positional acceptance P_i"),
        ("tree-budget", "Tree budget n"),
    ]:
        assert f'<dt id="{anchor}">' in html and words in html
    assert '<nav aria-label="Pages"' in html and 'href="/glossary"' in client.get("/").text


@pytest.mark.parametrize("page", VIEWS, ids=lambda page: page.name)
def test_a_page_opens_whatever_one_control_of_its_address_holds(page: Page) -> None:
    """The page reads its address leniently: any value of any one control is corrected with a note, never an
    error (a k the page's example report contradicts was once a 500 on /decide)."""
    for control in page.controls:
        for raw in ("-1", "0", "1e308", "nan", "abc"):
            view = page.view(QueryParams({control.name: raw}), strict=False)
            shown = view["controls"][control.name]["value"]
            if control.low is not None and control.high is not None and shown is not None:
                assert control.low <= shown <= control.high, (control.name, raw, shown)
            if raw in ("1e308", "nan", "abc") and control.kind != "text":
                assert view["notes"], (control.name, raw)  # corrected, and said so
