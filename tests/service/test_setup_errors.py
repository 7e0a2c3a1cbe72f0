"""A setup the service refuses: the parameter it blames, and the model's rule it keeps for a caller's labels."""

from __future__ import annotations

import pickle

import pytest

from app.model import limits
from app.service.regimes import SetupError, SetupRequest, build_setup


def test_a_broken_rule_is_blamed_on_the_field_the_request_changed_and_keeps_the_rule() -> None:
    with pytest.raises(SetupError) as refused:
        build_setup(SetupRequest(model="mixtral-8x7b", overrides={"model_experts": 1}))
    assert refused.value.name == "model_experts"  # the field changed, not the one the rule is raised on
    assert refused.value.rule is not None and refused.value.rule.fields == ("experts_per_token", "experts")
    worded = refused.value.worded({"experts_per_token": "Experts per token", "experts": "Experts"})
    assert worded.startswith("Experts per token (2) must not exceed Experts (1)")


def test_a_setup_error_survives_pickling_with_its_rule() -> None:
    """Raised in a heavy-work process and pickled back to the worker: rebuilt whole."""
    rule = limits.FieldError("experts_per_token", "{0} ({9}) must not exceed {1} ({x})", "experts")
    refused = SetupError("model_experts_per_token", str(rule), rule)
    again = pickle.loads(pickle.dumps(refused))
    assert (again.name, again.message, str(again)) == (refused.name, refused.message, str(refused))
    assert again.worded({"experts_per_token": "E/token"}) == "E/token ({9}) must not exceed experts ({x})"
