"""Property-based fuzzing of every operation in the app's own OpenAPI schema (schemathesis, in process).

Generic on purpose: operations are discovered from /openapi.json, so endpoints added later are fuzzed too.
Both valid and invalid inputs are generated; every response must be a documented status, never a 5xx, and
its body must match the documented schema.  The number of examples is bounded and derandomized so that
`make test` stays fast and repeatable.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config._checks import NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Ok
from schemathesis.openapi.checks import RejectedPositiveData

from app.web.core.config import get_settings
from app.web.core.security import document_query_limits
from app.web.main import app

MAX_EXAMPLES = 30


def _normalise_tuples(node: Any) -> Any:
    """Rewrite a homogeneous fixed-length tuple schema to the equivalent ``items`` form.

    Pydantic writes ``tuple[float, float]`` as ``prefixItems`` with ``minItems == maxItems == 2``, which is
    valid OpenAPI 3.1.  Schemathesis turns ``prefixItems`` into the draft-4 list form of ``items`` before
    building a draft 2020-12 validator for responses, and then rejects its own result as an invalid schema.
    When all positions share one schema and the length is pinned, ``items: <schema>`` says exactly the same,
    so the check stays as strict as the schema the API publishes.
    """
    if isinstance(node, list):
        return [_normalise_tuples(item) for item in node]
    if not isinstance(node, dict):
        return node
    result = {key: _normalise_tuples(value) for key, value in node.items()}
    prefix = result.get("prefixItems")
    if (
        isinstance(prefix, list)
        and prefix
        and "items" not in result
        and all(item == prefix[0] for item in prefix)
        and result.get("minItems") == result.get("maxItems") == len(prefix)
    ):
        del result["prefixItems"]
        result["items"] = prefix[0]
    return result


def _load_schema() -> schemathesis.BaseSchema:
    # The middleware answers 414 to an overlong query string before any route runs (generated negative
    # cases do get that long); document_query_limits puts that answer into the schema.
    raw = document_query_limits(_normalise_tuples(copy.deepcopy(app.openapi())), get_settings().max_query_length)
    rejected = [*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "414"]
    config = schemathesis.Config.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": rejected}}})
    loaded = schemathesis.openapi.from_dict(raw, config=config)
    loaded.app = app
    loaded.location = "/openapi.json"
    return loaded


schema = _load_schema()


def test_every_operation_in_openapi_is_fuzzed() -> None:
    published = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    }
    results = list(schema.get_all_operations())
    assert all(isinstance(result, Ok) for result in results), "schemathesis could not read some operations"
    fuzzed = {(result.ok().method.upper(), result.ok().path) for result in results if isinstance(result, Ok)}
    assert published, "the API publishes no operations"
    assert fuzzed == published
    assert ("GET", "/api/v1/speedup") in fuzzed


RULES_HEADING = "Rules between parameters"


def documented_rules(case: schemathesis.Case[Any]) -> str:
    """The operation's list of rules between parameters (the part of its description after the heading)."""
    description = case.operation.definition.raw.get("description", "")
    _, found, rules = description.partition(RULES_HEADING)
    return rules if found else ""


def refuses_by_label(case: schemathesis.Case[Any]) -> bool:
    """A page's view (/api/v1/views/<name>): it reads the page's controls as the page does, so that a value the
    page would correct, or a pasted text it cannot read, is refused naming the control by its on-screen label."""
    return bool(case.operation.definition.raw.get("x-refuses-by-label"))


def named_by_its_label(item: dict[str, Any], case: schemathesis.Case[Any]) -> bool:
    """A view's refusal: a value error at a control of the operation, whose message opens with the control's label."""
    documented = {parameter.name for parameter in case.operation.iter_parameters()}
    where, name = item["loc"][0], item["loc"][-1]
    return (
        item.get("type") == "value_error"
        and (where == "body" or name in documented)
        and bool(item.get("label"))
        and item["msg"].startswith(item["label"])
        and len(item["msg"]) > len(item["label"]) + 10
    )


def cross_parameter_rules_only(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case[Any]
) -> None:
    """Schema-valid input may be refused only by a rule between parameters, never by a hidden bound.

    The API documents its single-parameter bounds in the schema, but some rules tie parameters together (say,
    a correlation that is only possible for some acceptance rates), and those answer 422 by design.  Such a
    422 must come from `parameter_error` (type value_error), name a parameter of the operation (possibly
    one left at its default, or one the caller must now give) that the operation's description lists under
    "Rules between parameters", and say why.
    A pydantic error type here would mean the schema promises more than the endpoint accepts.  A request
    body is always sent, so a rule about its content may name it.
    """
    if case.meta is None or not case.meta.generation.mode.is_positive or response.status_code != 422:
        return
    if refuses_by_label(case):
        for item in response.json()["detail"]:
            assert named_by_its_label(item, case), f"a view's refusal must name the control by its label: {item}"
        return
    documented = {parameter.name for parameter in case.operation.iter_parameters()}
    rules = documented_rules(case)
    for item in response.json()["detail"]:
        where, name = item["loc"][0], item["loc"][-1]
        assert item["type"] == "value_error", f"schema-valid input refused by a hidden bound: {item}"
        assert where == "body" or name in documented, f"422 names {name!r}, not a parameter of this operation: {item}"
        assert item["msg"].startswith(f"{name}:") and len(item["msg"]) > len(name) + 10, item
        assert f"`{name}`" in rules, f"422 names a rule on {name!r} that the description does not list: {item}"


def refused_by_a_documented_rule(failure: BaseException, response: Any, case: schemathesis.Case[Any]) -> bool:
    """positive_data_acceptance failed only because a documented rule between parameters refused the input."""
    if not isinstance(failure, RejectedPositiveData) or response.status_code != 422:
        return False
    if refuses_by_label(case):
        return all(named_by_its_label(item, case) for item in response.json()["detail"])
    rules = documented_rules(case)
    return all(item["type"] == "value_error" and f"`{item['loc'][-1]}`" in rules for item in response.json()["detail"])


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_operation_never_fails_and_matches_its_schema(case: schemathesis.Case[Any]) -> None:
    """Every default check, positive_data_acceptance included: it may fail only on a documented rule."""
    response = case.call()
    try:
        case.validate_response(response, additional_checks=[cross_parameter_rules_only])
    except FailureGroup as group:
        unexplained = [
            failure for failure in group.exceptions if not refused_by_a_documented_rule(failure, response, case)
        ]
        if unexplained:
            raise
    assert response.status_code < 500
    if response.status_code == 422:
        detail = response.json()["detail"]
        assert detail, "a 422 must say what was wrong"
        for item in detail:
            assert item["msg"].strip()
            assert item["loc"][0] in {"query", "body"}


@pytest.mark.parametrize(
    "node, expected",
    [
        (
            {"type": "array", "prefixItems": [{"type": "number"}] * 2, "minItems": 2, "maxItems": 2},
            {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        ),
        # Mixed positions or an open length cannot be said with `items`: left alone.
        (
            {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}], "minItems": 2, "maxItems": 2},
            {"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}], "minItems": 2, "maxItems": 2},
        ),
        (
            {"type": "array", "prefixItems": [{"type": "number"}] * 2, "minItems": 2},
            {"type": "array", "prefixItems": [{"type": "number"}] * 2, "minItems": 2},
        ),
    ],
)
def test_tuple_normalisation_only_rewrites_equivalent_schemas(node: dict[str, Any], expected: dict[str, Any]) -> None:
    assert _normalise_tuples({"properties": {"pair": node}}) == {"properties": {"pair": expected}}
