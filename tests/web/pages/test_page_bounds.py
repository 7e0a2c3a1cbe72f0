"""A page's bounds are its inputs' (app.service): a slider narrower than the bounds says so in the declaration
(``slider``), next to the bounds, and no page sets low or high of its own."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fastapi.testclient import TestClient
from starlette.datastructures import QueryParams

from app.model import limits
from app.service import core_inputs, decision_inputs, regime_inputs, sampling_inputs
from app.service.inputs import Input
from app.web.pages.controls import Control
from app.web.pages.inputs import control
from app.web.pages.views import batch, demo, exact
from app.web.pages.views.decide import PAGE as DECIDE
from app.web.pages.views.decide import controls as decide_controls


def _named(controls: tuple[Control, ...], name: str) -> Control:
    return next(item for item in controls if item.name == name)


@pytest.mark.parametrize(
    ("controls", "name", "item", "span"),
    [
        (demo.CONTROLS, "k", core_inputs.K, (0, limits.DEMO_K_SLIDER_MAX)),
        (demo.CONTROLS, "c", core_inputs.C, (0.0, limits.DEMO_C_SLIDER_MAX)),
        (exact.CONTROLS, "k", sampling_inputs.BURSTY_K, (1, limits.DEMO_K_SLIDER_MAX)),
        (batch.SLIDERS, "k", regime_inputs.K, (1, limits.BATCH_K_SLIDER_MAX)),
        (decide_controls.CONTROLS, "budget", decision_inputs.TREE_BUDGET, None),
        (decide_controls.CONTROLS, "c", core_inputs.C, None),  # a number box: the whole bounds
    ],
)
def test_a_sliders_span_is_declared_with_its_input(
    controls: tuple[Control, ...], name: str, item: Input, span: tuple[float, float] | None
) -> None:
    shown = _named(controls, name)
    expected = span or (item.low, item.high)
    assert (shown.low, shown.high) == expected
    if shown.kind == "range":
        assert (item.slider or (item.low, item.high)) == expected
    assert item.low is not None and item.high is not None
    assert item.low <= expected[0] < expected[1] <= item.high  # within what the API and the command line take


def test_a_slider_outside_the_bounds_and_a_pages_own_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="slider"):
        replace(core_inputs.K, low=1)  # the demo's span starts at 0
    with pytest.raises(ValueError, match="slider"):
        Input("x", "X", float, 0.5, "X", 0.0, 1.0, slider=(0.0, 2.0))
    with pytest.raises(ValueError, match="slider span"):
        control(core_inputs.K, kind="range", high=8)


def test_the_tree_budget_takes_zero_on_the_page_as_the_api_does(client: TestClient) -> None:
    assert decision_inputs.TREE_BUDGET.low == 0 and decide_controls.BUDGET.low == 0
    shown = DECIDE.view(QueryParams("budget=0"), strict=True)
    assert shown["controls"]["budget"]["value"] == 0
    answer = client.get(shown["links"]["trees"])
    assert answer.status_code == 200 and answer.json()["budget"] == 0
    assert shown["trees"]["summary"].startswith(f"Best: {answer.json()['best_family']} with 0 drafted tokens")
