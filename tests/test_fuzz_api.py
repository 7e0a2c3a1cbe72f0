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

from app.main import app

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
    raw = _normalise_tuples(copy.deepcopy(app.openapi()))
    loaded = schemathesis.openapi.from_dict(raw)
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
    fuzzed = {(result.ok().method.upper(), result.ok().path) for result in schema.get_all_operations()}
    assert published, "the API publishes no operations"
    assert fuzzed == published
    assert ("GET", "/api/v1/speedup") in fuzzed


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_operation_never_fails_and_matches_its_schema(case: schemathesis.Case) -> None:
    response = case.call_and_validate()
    assert response.status_code < 500
    if response.status_code == 422:
        detail = response.json()["detail"]
        assert detail, "a 422 must say what was wrong"
        for item in detail:
            assert item["msg"].strip()
            assert item["loc"][0] == "query"


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
