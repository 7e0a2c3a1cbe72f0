"""The PromQL of the rules (app.model.rules.promql): the piecewise expressions are evaluated here in Python at every
batch (the PromQL turned into arithmetic), so that the break-even, the schedule's k and the best k the rules record
are held to the roofline itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from app.model import rules
from app.model.cost.capacity import decide
from app.service.regimes import SetupRequest, build_setup
from tests.planned import evaluate, expression, planned_rules

SETUP = build_setup(SetupRequest(model="dense-70b", draft="dense-3b", devices=8)).setup


def rules_for(engine: str = "vllm", **extra: Any) -> rules.RulesFile:
    return planned_rules(rules.RulesRequest(engine=engine, p=0.9, k_max=4, **extra), SETUP)


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "llamacpp", "sglang"])
def test_the_break_even_and_the_schedule_follow_the_roofline_at_every_batch(engine: str) -> None:
    made = rules_for(engine)
    limit = made.decision.batch_limit
    batches = np.arange(1, limit + 1, dtype=np.float64)
    priced = [k or max(made.engine_k) or max(made.decision.best_k) for k in made.engine_k]
    cost = rules.cycle_cost(SETUP, batches, np.asarray(priced, dtype=np.float64))
    even, schedule = expression(made, rules.BREAK_EVEN), expression(made, rules.SCHEDULE_K)
    for batch in range(1, limit + 1):
        values = {rules.SCHEDULE_BATCH: float(batch)}
        assert abs(evaluate(even, values) - cost[batch - 1]) <= cost[batch - 1] * rules.COST_TOLERANCE * 1.001
        assert evaluate(schedule, values) == made.engine_k[batch - 1]  # the k the config runs there
        halfway = {rules.SCHEDULE_BATCH: batch + 0.5}  # an average batch between two integers is priced too
        assert evaluate(even, halfway) > 1.0 and evaluate(schedule, halfway) in made.engine_k
    assert made.cost_pieces <= 16


def test_the_best_k_recorded_is_the_roofline_best_at_the_bin_of_the_measured_p() -> None:
    made = rules_for("vllm")
    best = expression(made, rules.RECOMMENDED_K)
    for p in (0.03, 0.12, 0.33, 0.58, 0.77, 0.93, 1.0):
        low = min(int(p / rules.P_STEP + 1e-9), round(1 / rules.P_STEP) - 1) * rules.P_STEP
        decided = decide(low, SETUP, 4, 1024)
        for batch in (1, 8, 60, 200, 400, 1024):
            values = {rules.ACCEPTANCE: p, rules.SCHEDULE_BATCH: float(batch)}
            assert evaluate(best, values) == decided.best_k[batch - 1], (p, batch)


def test_sglang_p_is_read_back_from_tokens_per_verification_at_the_running_k() -> None:
    from app.model.arithmetic import closed_form

    made = rules_for("sglang")
    read_back = expression(made, rules.ACCEPTANCE)
    assert read_back.startswith("clamp(\n  (") and "\n  and on (instance, model_name)" in read_back
    inner = read_back[len("clamp(\n  ") : read_back.index("\n  and on")]
    for k in (1, 2, 4):
        for p in (0.0, 0.2, 0.5, 0.8, 0.95, 1.0):
            values = {rules.TOKENS: closed_form.expected_tokens(p, k), rules.RUNNING_K: float(k)}
            found = min(max(evaluate(inner, values), 0.0), 1.0)
            assert abs(found - p) <= rules.P_TOLERANCE * 1.01, (k, p, found)
