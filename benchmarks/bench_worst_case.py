"""Every GET endpoint's worst-case request against a per-request budget of 2 seconds.

Bound: no single request may tie up a worker for long.  The caps on work (cycles, tokens,
vocabulary, grid, tree budget...) are read from the OpenAPI schema, never from a list kept here, so new
endpoints are covered as they appear.  The worst case of an operation is searched greedily from its
defaults: every integer parameter goes to its documented maximum, then every number to whichever end of
its range is slower, every choice to its slowest option, every free-form list to a long list; each change
is kept only if the request is still accepted (rules between parameters refuse some combinations), and the
search runs twice over the parameters since one choice can change which value of another is heavier.
The request found is then timed in process (framework, validation, handler and serialisation; no
network), best of 3.

A parameter without a documented maximum is reported as a GAP: its cap is not part of the contract.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from app.web.main import app

BUDGET_SECONDS = 2.0
REPEATS = 3
SEARCH_TIMEOUT_SECONDS = 30.0
# Free-form parameters whose heaviest valid form a schema cannot say; tried besides the generic long lists.
# Request bodies start from a valid document the API itself produces, padded to the documented maxLength.
BODY_SEEDS = {"/api/v1/calibrate/metrics": "/api/v1/calibrate/example-metrics?engines=8"}
KNOWN_HEAVY_STRINGS: dict[str, list[str]] = {
    "acceptance": [",".join(f"{0.9 * 0.5**i:.6f}" for i in range(16)), ",".join(["0.06"] * 16)],
    "widths": ["16,15,14,13", "16,16,16,16"],
    "prompt": ["the " * 50],
}


@dataclass(frozen=True)
class Parameter:
    name: str
    schema: dict[str, Any]
    required: bool
    description: str

    @property
    def kind(self) -> str:
        return str(self.schema.get("type", "string"))

    @property
    def maximum(self) -> float | None:
        value = self.schema.get("maximum", self.schema.get("exclusiveMaximum"))
        return None if value is None else float(value)

    @property
    def minimum(self) -> float | None:
        value = self.schema.get("minimum", self.schema.get("exclusiveMinimum"))
        return None if value is None else float(value)


def value_schema(schema: dict[str, Any]) -> dict[str, Any]:
    for key in ("anyOf", "oneOf"):
        branches = [branch for branch in schema.get(key, []) if branch.get("type") != "null"]
        if branches:
            return {**schema, **branches[0]}
    return schema


def parameters_of(operation: dict[str, Any]) -> list[Parameter]:
    return [
        Parameter(
            name=raw["name"],
            schema=value_schema(raw.get("schema", {})),
            required=bool(raw.get("required")),
            description=str(raw.get("description", "")),
        )
        for raw in operation.get("parameters", [])
        if raw.get("in") == "query"
    ]


def operations() -> dict[str, list[Parameter]]:
    return {
        path: parameters_of(methods["get"])
        for path, methods in sorted(app.openapi()["paths"].items())
        if "get" in methods
    }


def body_operations() -> dict[str, dict[str, Any]]:
    """Operations that take a request body, with the body's schemas by media type."""
    found = {}
    for path, methods in sorted(app.openapi()["paths"].items()):
        for method, operation in methods.items():
            if method in {"post", "put", "patch"} and "requestBody" in operation:
                found[f"{method.upper()} {path}"] = operation["requestBody"].get("content", {})
    return found


def padded_text(seed: str, length: int) -> str:
    """The seed document followed by unrelated metric lines up to `length` characters."""
    lines = [seed.rstrip("\n") + "\n"] if seed else []
    size = len(lines[0]) if lines else 0
    index = 0
    while True:
        # No labels: quotes would grow the body when JSON escapes them, past the byte cap on bodies.
        line = f"filler_series_{index}_total {index}.0\n"
        if size + len(line) > length:
            return "".join(lines)
        lines.append(line)
        size += len(line)
        index += 1


def worst_bodies(client: TestClient, path: str, content: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The largest bodies the schema allows, in each documented media type."""
    seed_url = BODY_SEEDS.get(path)
    seed = client.get(seed_url).text if seed_url else ""
    found: list[tuple[str, dict[str, Any]]] = []
    text_schema = content.get("text/plain", {}).get("schema", {})
    if "maxLength" in text_schema:
        body = padded_text(seed, int(text_schema["maxLength"]))
        found.append(("text/plain", {"content": body.encode(), "headers": {"content-type": "text/plain"}}))
    json_schema = content.get("application/json", {}).get("schema", {})
    strings = {
        name: int(field["maxLength"])
        for name, field in json_schema.get("properties", {}).items()
        if "maxLength" in field
        and "string" in (field.get("type") if isinstance(field.get("type"), list) else [field.get("type")])
    }
    if strings:
        document = {name: padded_text(seed, length) for name, length in strings.items()}
        found.append(("application/json", {"json": document}))
    return found


def candidates(parameter: Parameter) -> list[Any]:
    """Values worth trying for the worst case, heaviest guess first."""
    schema = parameter.schema
    if "enum" in schema:
        return list(schema["enum"])
    if parameter.kind == "integer":
        high, low = parameter.maximum, parameter.minimum
        if high is None:
            return []
        if "exclusiveMaximum" in schema:
            high -= 1
        values = [int(high)]
        return values + ([int(low) + ("exclusiveMinimum" in schema)] if low is not None else [])
    if parameter.kind == "number":
        found: list[Any] = []
        if parameter.maximum is not None:
            found.append(parameter.maximum if "exclusiveMaximum" not in schema else parameter.maximum * (1 - 1e-9))
        if parameter.minimum is not None:
            low = parameter.minimum
            found.append(low if "exclusiveMinimum" not in schema else (low + 1e-3 if low == 0 else low * (1 + 1e-9)))
        return found
    if parameter.kind == "boolean":
        return [True, False]
    default = str(schema.get("default") or "")
    strings = list(KNOWN_HEAVY_STRINGS.get(parameter.name, []))
    if "," in default:
        items = default.split(",")
        strings += [",".join(items * 16), ",".join(items * 4)]
    elif default:
        strings.append((default + " ") * 20)
    max_length = schema.get("maxLength")
    return [value for value in strings if max_length is None or len(value) <= max_length]


def required_starts(parameters: list[Parameter]) -> list[dict[str, Any]]:
    """Queries to start the search from: required parameters all at their low end, high end, or middle."""
    required = [parameter for parameter in parameters if parameter.required]
    starts = []
    for pick in ("low", "high", "middle"):
        query: dict[str, Any] = {}
        for parameter in required:
            options = candidates(parameter) or ["1"]
            if pick == "middle" and parameter.minimum is not None and parameter.maximum is not None:
                middle = (parameter.minimum + parameter.maximum) / 2
                query[parameter.name] = int(middle) if parameter.kind == "integer" else middle
            else:
                query[parameter.name] = options[-1] if pick == "low" else options[0]
        starts.append(query)
    return starts


def timed(client: TestClient, path: str, query: dict[str, Any]) -> tuple[int, float]:
    start = time.perf_counter()
    response = client.get(path, params=query)
    return response.status_code, time.perf_counter() - start


def worst_case(client: TestClient, path: str, parameters: list[Parameter]) -> tuple[dict[str, Any], float]:
    tried = [(query, timed(client, path, query)) for query in required_starts(parameters)]
    accepted = [(query, seconds) for query, (status, seconds) in tried if status == 200]
    if not accepted:
        raise RuntimeError(f"{path}: no starting query accepted; the required parameters need a hand-written start")
    query, current = accepted[0]
    search_started = time.perf_counter()
    # Integers first (they set the amount of work), then the rest; twice: which end of p is slower
    # depends on how many tokens are asked for, so the second pass judges against the final sizes.
    integers = [parameter for parameter in parameters if parameter.kind == "integer"]
    others = [parameter for parameter in parameters if parameter.kind != "integer"]
    for parameter in (integers + others) * 2:
        if time.perf_counter() - search_started > SEARCH_TIMEOUT_SECONDS:
            print(f"search for {path} stopped after {SEARCH_TIMEOUT_SECONDS:.0f} s at {parameter.name}")
            break
        options = candidates(parameter)
        if parameter.kind == "integer":
            # Integers are counts of work (cycles, tokens, vocabulary, batch...): the maximum, when accepted.
            options = options[:1]
        best_value, best_time = query.get(parameter.name), current
        if best_value is not None and parameter.kind != "integer":
            best_time = min(timed(client, path, query)[1] for _ in range(2))
        for value in options:
            status, seconds = timed(client, path, {**query, parameter.name: value})
            if status == 200 and (parameter.kind == "integer" or seconds > best_time):
                best_value, best_time = value, seconds
        if best_value is not None:
            query[parameter.name] = best_value
            current = best_time
    return query, current


def shown(query: dict[str, Any]) -> str:
    text = "&".join(f"{name}={value}" for name, value in query.items())
    return text if len(text) <= 160 else text[:157] + "..."


def main() -> None:
    client = TestClient(app)
    client.get("/healthz")  # start-up costs are not a request's
    gaps = []
    slowest = 0.0
    for path, parameters in operations().items():
        for parameter in parameters:
            if parameter.kind in {"integer", "number"} and parameter.maximum is None:
                gaps.append(f"{path} {parameter.name}: no maximum in the schema")
        query, _ = worst_case(client, path, parameters)
        seconds = min(timed(client, path, query)[1] for _ in range(REPEATS))
        slowest = max(slowest, seconds)
        print(f"worst case {path}?{shown(query)}: {seconds * 1e3:.1f} ms (budget {BUDGET_SECONDS:.0f} s)")
        name = "worst_case_" + path.removeprefix("/api/v1/").strip("/").replace("/", "_").replace("-", "_")
        print(f"RATIO {name} {seconds:.6f} {BUDGET_SECONDS:.6f} {seconds / BUDGET_SECONDS:.3f}")
    for label, content in body_operations().items():
        method, path = label.split(" ", 1)
        for media_type, request in worst_bodies(client, path, content):
            size = len(request.get("content", b"")) or sum(len(value) for value in request.get("json", {}).values())
            status = client.request(method, path, **request).status_code
            seconds = float("inf")
            for _ in range(REPEATS):
                start = time.perf_counter()
                client.request(method, path, **request)
                seconds = min(seconds, time.perf_counter() - start)
            slowest = max(slowest, seconds)
            print(
                f"worst case {label} {media_type} body of {size:,} characters: {seconds * 1e3:.1f} ms, status {status}"
            )
            kind = media_type.split("/")[-1]
            name = "worst_case_" + path.removeprefix("/api/v1/").replace("/", "_").replace("-", "_") + f"_{kind}_body"
            print(f"RATIO {name} {seconds:.6f} {BUDGET_SECONDS:.6f} {seconds / BUDGET_SECONDS:.3f}")
    for gap in gaps:
        print(f"GAP {gap}")
    print(f"slowest worst case: {slowest * 1e3:.1f} ms against a budget of {BUDGET_SECONDS:.0f} s")


if __name__ == "__main__":
    main()
