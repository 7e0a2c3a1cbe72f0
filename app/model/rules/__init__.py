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
    NOT_PAYING,
    OFF_SCHEDULE,
    SEVERITY,
    Alert,
    Field,
    Template,
)
from app.model.rules.canary import CANARY_SLOWER, CANARY_SPEEDUP
from app.model.rules.file import RulesFile, build, setup_text
from app.model.rules.promql import (
    ACCEPTANCE,
    AT_POSITION,
    BREAK_EVEN,
    COST_TOLERANCE,
    COUNTER_RESETS,
    DRAFT_LENGTH,
    DRAFTS,
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
    cycle_cost,
)
from app.model.rules.request import (
    DEFAULT_HOLD,
    DEFAULT_LABEL,
    DEFAULT_P_MARGIN,
    DEFAULT_WINDOW,
    MAX_MATCH,
    RulesError,
    RulesRequest,
    check,
    check_label,
)

__all__ = [
    "ACCEPTANCE",
    "ACCEPTANCE_LOW",
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
    "MAX_MATCH",
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
    "Alert",
    "Field",
    "RulesError",
    "RulesFile",
    "RulesRequest",
    "Template",
    "build",
    "check",
    "check_label",
    "cycle_cost",
    "setup_text",
]
