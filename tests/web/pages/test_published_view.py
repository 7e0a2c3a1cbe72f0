"""The published measurements as a page and as JSON: every point with its source, measured against predicted from
the other sources, the classes, the crossovers and the points that cannot be priced, with the reason."""

from __future__ import annotations

import dataclasses
import math

import pytest
from fastapi.testclient import TestClient

from app.model.cost import fitting, published
from app.service.schemas.published import PublishedCrossoverOut, PublishedOut
from app.web.pages.views.published import crossovers_table


def test_the_api_lists_every_point_with_its_prediction_from_the_other_sources(client: TestClient) -> None:
    body = client.get("/api/v1/published").json()
    points = published.load()
    assert body["points_total"] == len(points) == len(body["points"])
    priced = [row for row in body["points"] if row["priced"]]
    assert body["points_priced"] == len(priced) == sum(point.priced for point in points)
    scored = [row for row in priced if not row["sets_acceptance"]]
    assert body["points_scored"] == len(scored)
    for row in scored:
        assert row["predicted"] is not None and row["measured"] is not None and row["setup_class"]
        assert row["error"] == row["predicted"] / row["measured"] - 1
    errors = sorted(abs(math.log(row["predicted"] / row["measured"])) for row in scored)
    assert math.expm1(errors[-1]) == body["worst_error"] or abs(math.expm1(errors[-1]) - body["worst_error"]) < 1e-3
    by_id = {point.id: point for point in points}
    for row in body["points"]:
        assert row["url"].startswith("https://")
        assert row["replicas"] == by_id[row["id"]].replicas and row["devices"] == by_id[row["id"]].devices
        assert (row["excluded_because"] is None) == row["priced"]
    classes = {row["setup_class"]: row for row in body["classes"]}
    for label, row in classes.items():
        assert (row["median_error"] is None) == (row["points"] < published.MIN_CLASS_POINTS), label
    assert body["chosen_terms"] == published.published_fit()["protocol"]["chosen"]
    # what the protocol was offered: the dataset's own scopes, every chosen term among them
    offered = fitting.candidate_terms(fitting.problem(points))
    assert body["candidate_terms"] == offered and set(body["chosen_terms"]) <= set(offered)
    assert {name for name in offered if "@" in name} and body["scoped_terms"] == {}


def test_the_page_shows_the_scatter_the_classes_and_the_exclusions(client: TestClient) -> None:
    page = client.get("/published")
    assert page.status_code == 200
    for element in ('id="published-chart"', 'id="published-classes"', 'id="published-points"', "published-excluded"):
        assert element in page.text
    view = client.get("/api/v1/views/published").json()
    chart = view["figures"]["published-chart"]
    assert chart["layout"]["xaxis"]["type"] == "log" == chart["layout"]["yaxis"]["type"]
    names = [trace["name"] for trace in chart["data"]]
    assert "measured = predicted" in names and "±15%" in names
    body = client.get("/api/v1/published").json()
    assert f"{body['points_priced']} of {body['points_total']} published points priced" in view["headline"]
    assert len(view["excluded"]["rows"]) == body["points_total"] - body["points_priced"]
    assert body["interval_coverage"] == 0.9 and 0 < body["interval_spread"] < body["worst_error"]
    assert 0 < body["interval_held_out_of_source"] <= body["points_scored"]
    assert f"a factor of {1 + body['interval_spread']:.2f} either way" in view["headline"]
    assert f"held {body['interval_held_out_of_source']} of the {body['points_scored']}" in view["headline"]
    # the protocol's offer, counted from the API's list of candidates, and said on the page
    scoped = [name for name in body["candidate_terms"] if "@" in name]
    assert scoped and len(scoped) < len(body["candidate_terms"])
    said = f"{len(body['candidate_terms'])} offered, {len(scoped)} of them for one draft method or context regime"
    assert view["offered"] == said and said in page.text
    shown = sum(len(trace["x"]) for trace in chart["data"] if trace.get("mode") == "markers")
    assert shown == body["points_scored"]
    # each tick is named as a speedup in full (a log axis under two decades would read "4" for 0.4), and the ticks
    # cover every point's measured and predicted speedup: one at or below the least, one at or above the largest
    values = [value for trace in chart["data"] if trace.get("mode") == "markers" for value in trace["x"] + trace["y"]]
    for name in ("xaxis", "yaxis"):
        ticks, texts = chart["layout"][name]["tickvals"], chart["layout"][name]["ticktext"]
        assert texts == [f"{value:g}×" for value in ticks] and "1×" in texts
        low, high = (10**edge for edge in chart["layout"][name]["range"])
        assert all(low <= value <= high for value in ticks)
        assert ticks[0] <= min(values) * 1.5 and ticks[-1] >= max(values) / 1.5


def test_the_sweeps_that_stop_paying_come_first_and_the_others_fold_away(client: TestClient) -> None:
    """Every published sweep is listed once: those that stop paying within their batches, as measured or as
    predicted, in the open table; those measured and predicted to pay throughout, in the folded one."""
    body = client.get("/api/v1/published").json()
    view = client.get("/api/v1/views/published").json()
    opened = [row["cells"][0]["text"] for row in view["crossovers"]["rows"]]
    folded = [row["cells"][0]["text"] for row in view["crossovers_paying"]["rows"]]
    assert sorted(opened + folded) == sorted(row["sweep"] for row in body["crossovers"])
    for row in body["crossovers"]:
        predicted_in_range = row["predicted"] is not None and row["predicted"] <= row["batches"][-1]
        assert row["predicted_inside_own_range"] == predicted_in_range, row["sweep"]
        assert (row["sweep"] in opened) == (row["measured"] is not None or predicted_in_range), row["sweep"]
    assert any(row["measured"] is not None for row in body["crossovers"]) and folded
    page = client.get("/published").text
    assert page.index('id="published-crossovers"') < page.index('<details id="paying-details">')
    assert page.index('<details id="step-times-details">') < page.index('id="published-step-times"')


def test_a_sweep_that_pays_at_no_batch_says_so_instead_of_naming_batch_one(client: TestClient) -> None:
    """A crossover at the first batch means the speedup was never above 1 there: the table says 'pays at no batch'
    where the published speedups (or the prediction) stay at or below 1 from the first batch, and a batch where
    they ever paid."""
    body = client.get("/api/v1/published").json()
    view = client.get("/api/v1/views/published").json()
    cells = {
        row["cells"][0]["text"]: [cell["text"] for cell in row["cells"]]
        for table in ("crossovers", "crossovers_paying")
        for row in view[table]["rows"]
    }
    by_sweep = published.sweeps(point for point in published.load() if point.priced)
    never_predicted = 0
    for row in body["crossovers"]:
        shown = cells[row["sweep"]]
        paid = any((point.speedup or 0.0) > 1.0 for point in by_sweep[row["sweep"]])
        assert (shown[2] == "pays at no batch") == (not paid), row["sweep"]
        assert (shown[3] == "pays at no batch") == (row["predicted"] == 1), row["sweep"]
        assert shown[3] != "1"
        never_predicted += row["predicted"] == 1
    assert never_predicted >= 1  # the dataset holds sweeps predicted to pay at no batch (long-context MoE)
    # no published sweep fails to pay at all its batches; one that did reads so, beside one that stops at 3 to 4
    rows = [
        _crossover("never", measured=1, after=0, predicted=1),
        _crossover("stops", measured=4, after=2, predicted=3),
    ]
    table = crossovers_table(PublishedOut.model_construct(crossovers=rows))
    texts = [[cell["text"] for cell in row["cells"]] for row in table["rows"]]
    assert texts[0][2:4] == ["pays at no batch", "pays at no batch"] and texts[1][2:4] == ["3–4", "3"]


def _crossover(sweep: str, measured: int, after: int, predicted: int) -> PublishedCrossoverOut:
    """A sweep over batches 1, 2 and 4 that stops paying at ``measured``, the batch before it ``after``."""
    return PublishedCrossoverOut(
        sweep=sweep,
        batches=[1, 2, 4],
        measured=measured,
        measured_after=after,
        predicted=predicted,
        range_low=1,
        range_high=None,
        within_2x=True,
        inside_range=True,
        predicted_inside_own_range=True,
    )


def test_the_step_times_are_reported_against_the_baselines_own_figure(client: TestClient) -> None:
    """The plain step's level against each source's baseline rate (never fitted) and each sweep's growth (fitted
    from the other sources), in the JSON and on the page: the points, sources and sweeps counted from the dataset
    here, and the figures the fit file holds."""
    body = client.get("/api/v1/published").json()["step_times"]
    problem = fitting.problem(published.load())
    timed = [point for point in problem.points if fitting.measured_step_s(point) is not None]
    assert body["points"] == len(timed) >= 40 and body["sources"] == len({point.source for point in timed})
    large = [  # one engine's sequences: a batch that engines share counts at each one's share
        point for point in timed if fitting.engine_batch(point, [point.batch or 1])[0] >= body["large_batch_from"]
    ]
    assert body["large_batch_points"] == len(large) > 0
    assert body["median_error"] < 0 < body["median_absolute_error"]  # the roofline leaves time out
    groups = published.sweeps(timed)
    growing = {name for name, group in groups.items() if len({p.batch for p in group}) > 1}
    named = [row["sweep"] for row in body["growth"]] + [
        name for row in body["growth"] for name in row["same_plain_server"]
    ]
    assert sorted(named) == sorted(growing)  # each sweep once: stated, or beside the sweep over its plain server

    def baseline(name: str) -> list[tuple[int | None, float | None]]:
        return [(point.batch, point.baseline_value) for point in groups[name]]

    for row in body["growth"]:  # sweeps stated as one have the one plain server: the same baseline figures
        assert all(baseline(other) == baseline(row["sweep"]) for other in row["same_plain_server"])
    assert any(row["same_plain_server"] for row in body["growth"])
    check = published.published_fit()["step_times"]
    assert body["median_error"] == check["median_error"]
    assert {row["sweep"]: row["growth"] for row in body["growth"]} == check["growth"]
    view = client.get("/api/v1/views/published").json()
    assert len(view["step_times"]["rows"]) == len(body["growth"]) < len(growing)
    shared = next(row for row in body["growth"] if row["same_plain_server"])
    assert any(
        f"{shared['sweep']} and {len(shared['same_plain_server'])} more" in str(cells)
        for cells in view["step_times"]["rows"]
    )
    assert f"On {body['points']} points from {body['sources']} sources" in view["step_times_sentence"]
    assert 'id="published-step-times"' in client.get("/published").text


def test_an_accelerator_given_by_its_own_figures_is_named_as_the_users(client: TestClient) -> None:
    body = client.get("/api/v1/regimes/speedup-vs-batch", params={"hw_bandwidth_tb_s": 0.256, "p": 0.8}).json()
    name = body["setup"]["accelerator"]["name"]
    assert "H100" not in name and name.startswith("your accelerator (0.256 TB/s")
    assert "no published measurement of this class" in body["accuracy"]["summary"]
    preset = client.get("/api/v1/regimes/speedup-vs-batch", params={"p": 0.8}).json()
    assert preset["setup"]["accelerator"]["name"] == "H100 SXM"
    # the preset's device over another link (no peer-to-peer, a bridge) is still that device: named so, and of its
    # family, so it states the same class and error as the preset does
    params = {"hw": "h100-pcie", "model": "dense-70b", "devices": 2, "p": 0.8}
    linked = client.get("/api/v1/regimes/speedup-vs-batch", params=params).json()
    slower = client.get("/api/v1/regimes/speedup-vs-batch", params={**params, "hw_link_gb_s": 32}).json()
    assert slower["setup"]["accelerator"]["name"] == "H100 PCIe, link 32 GB/s"
    assert slower["accuracy"]["setup_class"] == linked["accuracy"]["setup_class"]
    assert "Hopper" in slower["accuracy"]["setup_class"]
    assert slower["speedup"][-1] < linked["speedup"][-1]  # its all-reduces carry the payload more slowly
    # a mesh: two MI300X reach each other over one of their seven links, not all seven
    params = {"hw": "mi300x", "model": "dense-70b", "devices": 2, "p": 0.8}
    mesh = client.get("/api/v1/regimes/speedup-vs-batch", params=params).json()
    switched = client.get("/api/v1/regimes/speedup-vs-batch", params={**params, "hw_links": 1}).json()
    assert mesh["setup"]["accelerator"]["links"] == 7 and mesh["setup"]["accelerator"]["name"] == "MI300X"
    assert switched["setup"]["accelerator"]["name"] == "MI300X, link 896 GB/s over 1 link"
    assert switched["accuracy"]["setup_class"] == mesh["accuracy"]["setup_class"]
    assert switched["speedup"][-1] > mesh["speedup"][-1]  # all 896 GB/s to its one peer
    # links on a device with no link given: named, and still nothing priced over it
    params = {"hw": "arc-pro-b70", "model": "dense-8b", "devices": 2, "p": 0.8}
    unlinked = client.get("/api/v1/regimes/speedup-vs-batch", params=params).json()
    meshed = client.get("/api/v1/regimes/speedup-vs-batch", params={**params, "hw_links": 3})
    assert meshed.status_code == 200, meshed.text
    assert meshed.json()["setup"]["accelerator"]["name"] == "Arc Pro B70, 3 links"
    assert meshed.json()["speedup"] == unlinked["speedup"]


def test_the_interval_each_answer_states_is_listed_by_class_as_the_answers_state_it(client: TestClient) -> None:
    """The table of intervals holds one row per class (no engine named) with a scored point, and its factor is
    the one a batch answer about a setup of that class carries."""
    body = client.get("/api/v1/published").json()
    rows = {row["setup_class"]: row for row in body["intervals"]}
    scored = {row["setup_class"] for row in body["points"] if row["predicted"] is not None and row["setup_class"]}
    assert len(rows) == len({label.split(", ", 2)[0] + ", any engine, " + label.split(", ", 2)[2] for label in scored})
    answer = client.get("/api/v1/regimes/speedup-vs-batch", params={"hw": "h100-sxm", "draft": "eagle3"}).json()
    accuracy = answer["accuracy"]
    row = rows[accuracy["setup_class"]]
    assert row["interval_spread"] == pytest.approx(accuracy["interval_spread"])
    assert row["interval_from"] == accuracy["interval_from"] and row["points"] == accuracy["class_points"]
    view = client.get("/api/v1/views/published").json()
    assert len(view["intervals"]["rows"]) == len(rows)


def test_what_keeps_points_out_is_counted_and_a_point_lacking_only_k_is_priced_with_it(client: TestClient) -> None:
    """Above the points that cannot be priced, what keeps them out and how many: counted from the dataset's own
    fields, and a point that lacks only k is priced once k is given."""
    body = client.get("/api/v1/published").json()
    rows = {row["reason"]: row for row in body["exclusions"]}
    points = published.load()
    assert rows["k not given"]["points"] == sum(point.k is None for point in points)
    unnamed = sum(point.accelerator is None and point.hardware is None for point in points)
    assert rows["accelerator not named"]["points"] == unnamed
    unpriced = [point for point in points if not point.priced]
    assert (
        sum(row["alone"] for row in body["exclusions"]) <= len(unpriced) <= sum(row["points"] for row in rows.values())
    )
    lacking_k = [
        point for point in unpriced if [kind for kind, _ in published.exclusion_reasons(point)] == ["k not given"]
    ]
    assert len(lacking_k) == rows["k not given"]["alone"] > 0
    assert all(dataclasses.replace(point, k=3).priced for point in lacking_k)
    view = client.get("/api/v1/views/published").json()
    shown = [[cell["text"] for cell in row["cells"]] for row in view["exclusions"]["rows"]]
    assert shown[0] == ["k not given", str(rows["k not given"]["points"]), str(rows["k not given"]["alone"])]
    assert 'id="published-exclusions"' in client.get("/published").text
