"""A catalogue of hostile query strings against every GET operation published in /openapi.json.

For each query parameter: NaN, +-inf, below the minimum, huge numbers (1e30, 10**40), words and the empty
string; a wrong choice for enumerations; missing required parameters; the same parameter twice; a query
string over the configured limit.  Each must get a 4xx whose message names the parameter (and, for numbers,
its bounds), and the server must keep serving afterwards.  Operations are discovered, not listed, so
endpoints added later are covered without touching this file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient

from app.web.core.config import get_settings
from app.web.main import app

OPENAPI = app.openapi()
MAX_QUERY_LENGTH = get_settings().max_query_length
NUMERIC = {"integer", "number"}


class Answer(Protocol):
    """An HTTP response from httpx or from the test client (which may use another httpx)."""

    @property
    def status_code(self) -> int: ...

    @property
    def text(self) -> str: ...

    @property
    def headers(self) -> Any: ...

    def json(self) -> Any: ...


@dataclass(frozen=True)
class QueryParameter:
    name: str
    kind: str
    required: bool
    minimum: float | None
    maximum: float | None
    exclusive_minimum: float | None
    exclusive_maximum: float | None
    choices: tuple[Any, ...]
    description: str
    # A page's view names a control by its label on the page (x-label), and reads an empty value as the
    # default (allowEmptyValue), as the page's own address does.
    label: str | None = None
    empty_is_default: bool = False


@dataclass(frozen=True)
class Operation:
    path: str
    parameters: tuple[QueryParameter, ...]
    required_values: tuple[tuple[str, Any], ...] = ()

    def url(self, query: str = "") -> str:
        return f"{self.path}?{query}" if query else self.path

    def valid_query(self, skip: str | None = None) -> list[str]:
        """Required parameters other than `skip` at accepted values, so only the bad one is judged."""
        return [f"{name}={quote(str(value))}" for name, value in self.required_values if name != skip]


@dataclass(frozen=True)
class BadRequest:
    operation: Operation
    query: str
    parameter: str
    label: str
    expected_status: int | None  # None: free text; any answer but a 5xx, and a 4xx must name the parameter
    bounds: tuple[str, ...] = ()
    on_screen: str | None = None  # the parameter's label on the page, where the operation refuses by label

    @property
    def url(self) -> str:
        return self.operation.url(self.query)


def _value_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an Optional parameter's schema."""
    for key in ("anyOf", "oneOf"):
        branches = [branch for branch in schema.get(key, []) if branch.get("type") != "null"]
        if branches:
            return {**schema, **branches[0]}
    return schema


def _parameter(raw: dict[str, Any]) -> QueryParameter:
    schema = _value_schema(raw.get("schema", {}))
    return QueryParameter(
        name=raw["name"],
        kind=str(schema.get("type", "string")),
        required=bool(raw.get("required", False)),
        minimum=schema.get("minimum"),
        maximum=schema.get("maximum"),
        exclusive_minimum=schema.get("exclusiveMinimum"),
        exclusive_maximum=schema.get("exclusiveMaximum"),
        choices=tuple(schema.get("enum", ())),
        description=str(raw.get("description") or schema.get("description") or ""),
        label=raw.get("x-label"),
        empty_is_default=bool(raw.get("allowEmptyValue", False)),
    )


def discover_operations(openapi: dict[str, Any]) -> list[Operation]:
    operations = []
    for path, methods in sorted(openapi["paths"].items()):
        if "get" not in methods or "{" in path:
            continue
        parameters = tuple(_parameter(raw) for raw in methods["get"].get("parameters", []) if raw.get("in") == "query")
        operations.append(Operation(path, parameters, accepted_required_values(path, parameters)))
    return operations


def accepted_required_values(path: str, parameters: tuple[QueryParameter, ...]) -> tuple[tuple[str, Any], ...]:
    """Values for the required parameters that the endpoint accepts together (rules may tie them)."""
    required = [parameter for parameter in parameters if parameter.required]
    if not required:
        return ()
    attempts = [tuple((parameter.name, valid_value(parameter, pick)) for parameter in required) for pick in PICKS]
    with TestClient(app) as probe:
        for attempt in attempts:
            if probe.get(path, params=dict(attempt)).status_code == 200:
                return attempt
    return attempts[0]


PICKS = ("low", "middle", "high")


def valid_value(parameter: QueryParameter, pick: str = "low") -> Any:
    """A value inside the parameter's own bounds: near the low end, in the middle or at the high end."""
    if parameter.choices:
        return parameter.choices[0]
    if parameter.kind == "boolean":
        return "true"
    if parameter.kind in NUMERIC:
        low = parameter.minimum if parameter.minimum is not None else parameter.exclusive_minimum
        high = parameter.maximum if parameter.maximum is not None else parameter.exclusive_maximum
        low = 0 if low is None else low
        high = low + 100 if high is None else high
        value = {"low": low, "middle": (low + high) / 2, "high": high}[pick]
        integer = parameter.kind == "integer"
        if pick == "low" and parameter.minimum is None and parameter.exclusive_minimum is not None:
            value = value + 1 if integer else value + 1e-6
        if pick == "high" and parameter.maximum is None and parameter.exclusive_maximum is not None:
            value = value - 1 if integer else value - 1e-6
        return int(value) if integer else value
    return "x"


OPERATIONS = discover_operations(OPENAPI)


def number_text(value: float) -> set[str]:
    """The ways a bound may be written in a message: 2000000, 2,000,000, 0.5, 1e-06."""
    texts = {repr(value), f"{value:g}"}
    if float(value).is_integer():
        texts |= {str(int(value)), f"{int(value):,}"}
    return texts


def bounds_of(parameter: QueryParameter) -> tuple[str, ...]:
    return tuple(
        "|".join(sorted(number_text(bound)))
        for bound in (
            parameter.minimum if parameter.minimum is not None else parameter.exclusive_minimum,
            parameter.maximum if parameter.maximum is not None else parameter.exclusive_maximum,
        )
        if bound is not None
    )


def numeric_bad_values(parameter: QueryParameter) -> list[tuple[str, str]]:
    low = parameter.minimum if parameter.minimum is not None else parameter.exclusive_minimum
    if low is None or low >= 0:
        below = "-1"
    else:
        below = str(int(low) - 1) if parameter.kind == "integer" else repr(float(low) * 2 - 1)
    values = [
        ("nan", "nan"),
        ("+inf", "inf"),
        ("+inf spelt out", "%2BInfinity"),
        ("-inf", "-inf"),
        ("below minimum", below),
        ("1e30", "1e30"),
        ("10**40", str(10**40)),
        ("-10**40", str(-(10**40))),
        ("word", "lots"),
        ("empty", ""),
        ("script", quote("<script>alert(1)</script>")),
    ]
    if parameter.kind == "integer":
        values.append(("fraction", "1.5"))
    return values


# Free-form parameters (lists, prompts, overrides) are parsed by the endpoint itself: whatever it makes of
# these, it must not fail, and when it refuses one it must say which parameter was wrong.
FREE_TEXT = [
    ("nan list", "nan,nan"),
    ("inf list", "inf,-inf"),
    ("huge list", "1e308,1e308,1e308"),
    ("10**40", str(10**40)),
    ("negative", "-1,-2"),
    ("empty items", ",,,"),
    ("colons", ":::"),
    ("markup", "<script>alert(1)</script>"),
    ("nul and controls", "\x00\x01\x1b[31m"),
    ("non-ASCII", "é中😀"),
    ("long", "9," * 600),
    ("json", '{"a": [1, 2]}'),
]


def catalogue() -> Iterator[BadRequest]:
    for operation in OPERATIONS:
        for parameter in operation.parameters:
            rest = operation.valid_query(skip=parameter.name)
            if parameter.required:
                yield BadRequest(operation, "&".join(rest), parameter.name, "missing", 422)
            if parameter.kind in NUMERIC:
                cases = numeric_bad_values(parameter)
            elif parameter.choices:
                cases = [("not a choice", "no-such-choice"), ("empty", ""), ("script", quote("<b>x</b>"))]
            elif parameter.kind == "boolean":
                cases = [("not a boolean", "maybe")]
            else:
                cases = []
            bounds = bounds_of(parameter) if parameter.kind in NUMERIC else ()
            for label, raw in cases:
                query = "&".join([*rest, f"{parameter.name}={raw}"])
                if raw == "" and parameter.empty_is_default:
                    yield BadRequest(operation, query, parameter.name, "empty is the default", 200)
                    continue
                yield BadRequest(operation, query, parameter.name, label, 422, bounds, parameter.label)
            if parameter.kind == "string" and not parameter.choices:
                for label, raw in FREE_TEXT:
                    query = "&".join([*rest, f"{parameter.name}={quote(raw, safe='')}"])
                    yield BadRequest(operation, query, parameter.name, label, None, (), parameter.label)
        if operation.parameters:
            first = operation.parameters[0]
            value = quote(str(dict(operation.required_values).get(first.name, valid_value(first))))
            query = "&".join(
                [*operation.valid_query(skip=first.name), f"{first.name}={value}", f"{first.name}={value}"]
            )
            yield BadRequest(operation, query, first.name, "repeated", 422)
        padding = "x" * (MAX_QUERY_LENGTH + 1)
        yield BadRequest(operation, f"pad={padding}", "query", "longer than max_query_length", 414)


CATALOGUE = list(catalogue())


def problems_with(request: BadRequest, response: Answer) -> list[str]:
    """Empty when the response is the 4xx the request deserves."""
    where = f"{request.url[:120]} ({request.parameter}: {request.label})"
    if request.expected_status is None:
        if response.status_code >= 500:
            return [f"{where}: status {response.status_code}: {response.text[:200]}"]
        if response.status_code < 400:
            return []
    elif response.status_code != request.expected_status:
        return [f"{where}: status {response.status_code}, expected {request.expected_status}: {response.text[:200]}"]
    elif response.status_code < 400:
        return []
    try:
        detail = response.json()["detail"]
    except (ValueError, KeyError, TypeError):
        return [f"{where}: body is not a JSON error with detail: {response.text[:200]}"]
    messages = [str(item.get("msg", "")) for item in detail if isinstance(item, dict)]
    if request.parameter == "query":
        naming = [message for message in messages if "query string" in message and str(MAX_QUERY_LENGTH) in message]
    elif request.on_screen is not None:
        # Refused by its label on the page, and located by its name in the address.
        naming = [
            str(item.get("msg", ""))
            for item in detail
            if isinstance(item, dict)
            and request.on_screen in str(item.get("msg", ""))
            and list(item.get("loc", []))[-1:] == [request.parameter]
        ]
    else:
        naming = [message for message in messages if request.parameter in message]
    if not naming:
        return [f"{where}: no message names {request.on_screen or request.parameter!r}: {messages}"]
    found: list[str] = []
    for bound in request.bounds:
        if not any(any(text in message for text in bound.split("|")) for message in naming):
            found.append(f"{where}: message does not state the bound {bound.split('|')[0]}: {naming}")
    # A rejected value may be quoted back inside JSON, never in a body a browser would render as markup.
    if not response.headers.get("content-type", "").startswith("application/json"):
        found.append(f"{where}: error is not JSON: {response.headers.get('content-type')}")
    return found


def run_catalogue(get: Callable[[str], Answer], requests: list[BadRequest]) -> list[str]:
    problems: list[str] = []
    for request in requests:
        problems.extend(problems_with(request, get(request.url)))
    return problems


def test_catalogue_covers_every_get_operation_and_parameter() -> None:
    published = {path for path, methods in OPENAPI["paths"].items() if "get" in methods and "{" not in path}
    assert {operation.path for operation in OPERATIONS} == published
    # the one GET with a path parameter reads a job; an unknown one is a 404 (tests/test_routers_measure.py)
    assert {path for path in OPENAPI["paths"] if "{" in path and "get" in OPENAPI["paths"][path]} == {
        "/api/v1/measure/{job_id}"
    }
    assert "/api/v1/speedup" in published
    covered = {(request.operation.path, request.parameter) for request in CATALOGUE}
    for operation in OPERATIONS:
        assert (operation.path, "query") in covered
        for parameter in operation.parameters:
            if parameter.kind in NUMERIC or parameter.choices or parameter.kind == "boolean":
                assert (operation.path, parameter.name) in covered


def test_every_numeric_parameter_documents_its_bounds() -> None:
    """Caps on work are part of the contract: minimum and maximum in the schema, the maximum in the text."""
    gaps = []
    for operation in OPERATIONS:
        for parameter in operation.parameters:
            if parameter.kind not in NUMERIC:
                continue
            high = parameter.maximum if parameter.maximum is not None else parameter.exclusive_maximum
            low = parameter.minimum if parameter.minimum is not None else parameter.exclusive_minimum
            if high is None or low is None:
                gaps.append(f"{operation.path} {parameter.name}: schema lacks a minimum or maximum")
            elif not any(text in parameter.description for text in number_text(high)):
                gaps.append(f"{operation.path} {parameter.name}: description does not state the maximum {high}")
    assert gaps == []


@pytest.mark.parametrize("operation", OPERATIONS, ids=[operation.path for operation in OPERATIONS])
def test_bad_inputs_get_a_4xx_naming_the_parameter(client: TestClient, operation: Operation) -> None:
    requests = [request for request in CATALOGUE if request.operation == operation]
    assert requests
    assert run_catalogue(client.get, requests) == []
    assert client.get("/healthz").status_code == 200


def test_whole_catalogue_over_real_http_then_server_still_serves(live_server: str) -> None:
    """The same catalogue through uvicorn's HTTP parser (raw bytes on a socket, not an in-process call)."""
    with httpx.Client(base_url=live_server, timeout=30) as http:
        problems = run_catalogue(http.get, CATALOGUE)
        assert problems == []
        health = http.get("/healthz")
        assert health.status_code == 200
        assert health.json()["status"] == "ok"
        assert http.get("/api/v1/speedup", params={"p": 0.8, "k": 5, "c": 0}).json()["expected_tokens"] == (
            pytest.approx(3.68928)
        )


def test_long_query_string_on_the_page_is_refused_too(client: TestClient) -> None:
    response = client.get("/?k=" + "9" * (MAX_QUERY_LENGTH + 1))
    assert response.status_code == 414
    assert str(MAX_QUERY_LENGTH) in response.json()["detail"][0]["msg"]
    assert client.get("/?k=" + "9" * (MAX_QUERY_LENGTH - 10)).status_code == 200


def test_catalogue_check_would_catch_a_bad_answer() -> None:
    """The judge itself: a 200, an anonymous 422 and a 422 without bounds are all reported."""
    operation = next(operation for operation in OPERATIONS if operation.path == "/api/v1/speedup")
    request = next(request for request in CATALOGUE if request.operation == operation and request.parameter == "p")
    ok = httpx.Response(200, json={"speedup": 1.0})
    anonymous = httpx.Response(422, json={"detail": [{"loc": ["query"], "msg": "invalid value"}]})
    no_bounds = httpx.Response(422, json={"detail": [{"loc": ["query", "p"], "msg": "p is invalid"}]})
    good = httpx.Response(422, json={"detail": [{"loc": ["query", "p"], "msg": "p must be from 0 to 1; got 'nan'"}]})
    assert problems_with(request, ok)
    assert problems_with(request, anonymous)
    assert problems_with(request, no_bounds)
    assert problems_with(request, good) == []


def test_an_input_refusal_crosses_a_process_whole() -> None:
    """A heavy route's InputError is raised in a worker process and pickled back: name, message and value intact,
    so that the app-wide handler still names the input."""
    import pickle

    from app.model.limits import InputError

    error = pickle.loads(pickle.dumps(InputError("widths", "each width must be an integer from 2 to 16", "1")))
    assert (error.name, error.message, error.value, str(error)) == (
        "widths",
        "each width must be an integer from 2 to 16",
        "1",
        "widths: each width must be an integer from 2 to 16",
    )
