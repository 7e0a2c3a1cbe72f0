"""Prometheus rules for a fleet: the arithmetic of speculative decoding as recording and alerting rules.

From an engine version's own series (its adapter's ``RULES_METRICS``) and the user's setup and the plan's
schedule, per instance and class (the value of a label, ``model_name`` by default), over a rate window.  By
concept:

- :mod:`.request`: what a rules file is asked for and its checks (``RulesRequest``, ``check``, ``RulesError``);
- :mod:`.promql`: the recorded ``specdec:*`` series and the PromQL that records them;
- :mod:`.alerts`: the alerts, what they say and what they tell an operator to do;
- :mod:`.canary`: the canary's speedup over control per class, and the alert to roll a class back;
- :mod:`.file`: the rules file, its group of recording and alerting rules, written as YAML (``build``).

``from app.model import rules`` gives the names of all four.
"""

from app.model.rules.alerts import (
    ACCEPTANCE_LOW,
    MIN_DRAFTS,
    NOT_PAYING,
    OFF_SCHEDULE,
    SEVERITY,
    Alert,
    Field,
    Template,
)
from app.model.rules.canary import CANARY_SLOWER, CANARY_SPEEDUP
from app.model.rules.file import RulesFile, build, dump, header, rules_id, setup_text
from app.model.rules.promql import (
    ACCEPTANCE,
    ACCEPTANCE_UPPER,
    AT_POSITION,
    BREAK_EVEN,
    COST_TOLERANCE,
    COUNTER_RESETS,
    DRAFT_LENGTH,
    DRAFTS,
    MAX_READ_BACK_K,
    P_STEP,
    P_TOLERANCE,
    RECOMMENDED_K,
    RULES_LABEL,
    RUNNING_BATCH,
    RUNNING_K,
    SCHEDULE_BATCH,
    SCHEDULE_K,
    SPEEDUP,
    TOKENS,
    Z_999,
    cycle_cost,
    number,
    pieces,
    piecewise_constant,
    piecewise_linear,
    scoped,
)
from app.model.rules.request import (
    DEFAULT_HOLD,
    DEFAULT_LABEL,
    DEFAULT_P_MARGIN,
    DEFAULT_WINDOW,
    MAX_DURATION_S,
    MAX_MATCH,
    MIN_WINDOW_S,
    CheckedRequest,
    RulesError,
    RulesRequest,
    check,
    check_label,
    check_match,
    duration_seconds,
)

__all__ = [
    "ACCEPTANCE",
    "ACCEPTANCE_LOW",
    "ACCEPTANCE_UPPER",
    "AT_POSITION",
    "BREAK_EVEN",
    "CANARY_SLOWER",
    "CANARY_SPEEDUP",
    "COST_TOLERANCE",
    "COUNTER_RESETS",
    "DEFAULT_HOLD",
    "DEFAULT_LABEL",
    "DEFAULT_P_MARGIN",
    "DEFAULT_WINDOW",
    "DRAFTS",
    "DRAFT_LENGTH",
    "MAX_DURATION_S",
    "MAX_MATCH",
    "MAX_READ_BACK_K",
    "MIN_DRAFTS",
    "MIN_WINDOW_S",
    "NOT_PAYING",
    "OFF_SCHEDULE",
    "P_STEP",
    "P_TOLERANCE",
    "RECOMMENDED_K",
    "RULES_LABEL",
    "RUNNING_BATCH",
    "RUNNING_K",
    "SCHEDULE_BATCH",
    "SCHEDULE_K",
    "SEVERITY",
    "SPEEDUP",
    "TOKENS",
    "Z_999",
    "Alert",
    "CheckedRequest",
    "Field",
    "RulesError",
    "RulesFile",
    "RulesRequest",
    "Template",
    "build",
    "check",
    "check_label",
    "check_match",
    "cycle_cost",
    "dump",
    "duration_seconds",
    "header",
    "number",
    "pieces",
    "piecewise_constant",
    "piecewise_linear",
    "rules_id",
    "scoped",
    "setup_text",
]
