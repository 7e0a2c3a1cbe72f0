"""The demo's closed form in the browser (static/js/closed_form.js) against the Python model, in real Chromium."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from playwright.sync_api import Page

from app.model.arithmetic import closed_form as cf
from app.model.limits import K_MAX_LIMIT
from app.web.core.assets import asset_url
from tests.support import wait_until

pytestmark = pytest.mark.browser

RELATIVE = 1e-12
EVALUATE = """async ([url, points]) => {
  const m = await import(url);
  return points.map(([p, k, c]) => [
    m.expectedTokens(p, k), m.costPerCycle(k, c), m.speedup(p, k, c), m.bestK(p, c, m.K_SEARCH_MAX),
    m.breakEvenAcceptance(k, c), m.draftAcceptanceRate(p, k), m.operationsIncrease(p, k, c),
  ]);
}"""


def generated_points(count: int) -> list[tuple[float, int, float]]:
    rng = np.random.default_rng(20261201)
    edges_p = [0.0, 1.0, 1e-12, 1e-9, 0.5, 0.5 - 1e-16, 1 - 1e-9, 1 - 1e-12, 0.75, 0.999999]
    edges_c = [0.0, 1e-12, 0.15, 1.0, 10.0]
    points = [(p, k, c) for p in edges_p for k in (0, 1, 2, 6, 16, 63, 64) for c in edges_c]
    for _ in range(count - len(points)):
        p = float(rng.choice([rng.random(), 1 - 10 ** -rng.uniform(1, 12), 10 ** -rng.uniform(1, 12)]))
        points.append((p, int(rng.integers(0, K_MAX_LIMIT + 1)), float(rng.choice([rng.random(), 10 * rng.random()]))))
    return points


def close(js: float | None, python: float | None) -> bool:
    if js is None or python is None:
        return js is None and python is None
    return math.isclose(js, python, rel_tol=RELATIVE, abs_tol=1e-300)


def test_closed_form_module_matches_the_python_model(page: Page, live_server: str) -> None:
    page.goto(live_server + "/")
    wait_until(page, "document.body.dataset.ready === '1'")
    points = generated_points(4000)
    results: list[list[Any]] = page.evaluate(EVALUATE, [asset_url("js/closed_form.js"), points])
    mismatches = []
    for (p, k, c), (tokens, cost, speedup, best, break_even, rate, operations) in zip(points, results, strict=True):
        python_best = cf.best_k(p, c, K_MAX_LIMIT)
        python_rate = cf.draft_acceptance_rate(p, k) if k > 0 else None
        checks = {
            "expected_tokens": close(tokens, cf.expected_tokens(p, k)),
            "cost_per_cycle": close(cost, cf.cost_per_cycle(k, c)),
            "speedup": close(speedup, cf.speedup(p, k, c)),
            "best_k": best[0] == python_best[0] and close(best[1], python_best[1]),
            "break_even": close(break_even, cf.break_even_acceptance(k, c)),
            "draft_acceptance_rate": close(rate, python_rate),
            "operations_increase": close(operations, cf.operations_increase(p, k, c)),
        }
        mismatches += [(name, p, k, c) for name, ok in checks.items() if not ok]
    assert len(points) == 4000
    assert mismatches == []
