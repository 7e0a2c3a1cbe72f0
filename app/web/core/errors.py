"""422 responses that name the parameter and its bounds."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.routing import Route

from app.model.limits import InputError

Handler = TypeVar("Handler", bound=Callable[..., Any])


class ParameterError(Exception):
    """A parameter that passed its own bounds but not a rule involving others."""

    def __init__(self, name: str, message: str, value: object = None) -> None:
        super().__init__(message)
        self.name = name
        self.message = message
        self.value = value

    def __reduce__(self) -> tuple[type[ParameterError], tuple[str, str, object]]:
        # Raised in a heavy-work process and pickled back: rebuilt from all three fields.
        return type(self), (self.name, self.message, self.value)


def parameter_error(name: str, message: str, value: object = None) -> ParameterError:
    return ParameterError(name, message, value)


def _format_number(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def query_fields(dependant: Dependant) -> list[Any]:
    """Query parameters of a route, including those declared by its dependencies."""
    fields = list(dependant.query_params)
    for sub in dependant.dependencies:
        fields.extend(query_fields(sub))
    return fields


def _bounds_of(request: Request, name: str) -> str | None:
    """'between 0 and 1', 'at least 1', ... from the route's declared query parameter."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None) if isinstance(route, Route) else None
    if dependant is None:
        return None
    for field in query_fields(dependant):
        if field.alias != name:
            continue
        annotation = field.field_info.annotation
        if annotation is str:
            return _length_bounds(field.field_info.metadata)
        if annotation not in (int, float, int | None, float | None):
            return None
        return _numeric_bounds(
            field.field_info.metadata, "an integer" if int in _members(annotation) else "a finite number"
        )
    return None


def _members(annotation: Any) -> tuple[Any, ...]:
    return tuple(getattr(annotation, "__args__", (annotation,)))


def _numeric_bounds(metadata: list[Any], kind: str) -> str:
    low = high = None
    low_word = high_word = ""
    for item in metadata:
        for attr, word in (("ge", "at least"), ("gt", "greater than")):
            if getattr(item, attr, None) is not None:
                low, low_word = getattr(item, attr), word
        for attr, word in (("le", "at most"), ("lt", "less than")):
            if getattr(item, attr, None) is not None:
                high, high_word = getattr(item, attr), word
    if low is not None and high is not None:
        inclusive = low_word == "at least" and high_word == "at most"
        span = f"from {_format_number(low)} to {_format_number(high)}"
        return f"{kind} {span}" + (
            "" if inclusive else f" ({low_word} {_format_number(low)}, {high_word} {_format_number(high)})"
        )
    if low is not None:
        return f"{kind} {low_word} {_format_number(low)}"
    if high is not None:
        return f"{kind} {high_word} {_format_number(high)}"
    return kind


def _length_bounds(metadata: list[Any]) -> str | None:
    shortest = next((item.min_length for item in metadata if getattr(item, "min_length", None) is not None), None)
    longest = next((item.max_length for item in metadata if getattr(item, "max_length", None) is not None), None)
    if shortest is not None and longest is not None:
        return f"text of {shortest} to {longest} characters"
    if longest is not None:
        return f"text of at most {longest} characters"
    if shortest is not None:
        return f"text of at least {shortest} characters"
    return None


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


async def handle_validation_error(request: Request, exc: Exception) -> JSONResponse:
    """Rewrite pydantic's errors so each message names the parameter and its bounds."""
    assert isinstance(exc, RequestValidationError)
    details = []
    for error in exc.errors():
        location = [str(part) for part in error.get("loc", ())]
        name = location[-1] if location else "request"
        bounds = _bounds_of(request, name) if location[:1] == ["query"] else None
        given = error.get("input")
        if error.get("type") == "missing":
            message = f"{name} is required" + (f": {bounds}" if bounds else "")
        elif bounds:
            message = f"{name} must be {bounds}; got {_shown(given)}"
        else:
            message = f"{name}: {error.get('msg', 'invalid value')}"
        details.append({"loc": location, "msg": message, "type": error.get("type", "value_error")})
    return JSONResponse(status_code=422, content={"detail": details})


async def handle_parameter_error(request: Request, exc: Exception) -> JSONResponse:
    """A parameter's refusal (or an input's, raised by the application layer) as the API's 422 naming it."""
    assert isinstance(exc, (ParameterError, InputError))
    message = f"{exc.name}: {exc.message}"
    return JSONResponse(
        status_code=422,
        content={"detail": [{"loc": ["query", exc.name], "msg": message, "type": "value_error"}]},
    )


def with_rules(rules: str) -> Callable[[Handler], Handler]:
    """Appends the rules between parameters to a handler's docstring, which becomes its OpenAPI description."""

    def decorate(handler: Handler) -> Handler:
        handler.__doc__ = (handler.__doc__ or "").rstrip() + rules
        return handler

    return decorate
