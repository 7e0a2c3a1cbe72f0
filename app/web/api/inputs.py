"""The API's query parameters, generated from the declarations of app.service.inputs.

``query`` is one input's ``Query`` (its bounds, length, pattern and choices as the OpenAPI document states
them); ``parameter`` its annotated type; ``takes`` gives a handler's parameters named as inputs those inputs'
types, bounds and defaults; ``dependency`` a FastAPI dependency that takes a list of inputs as query parameters
and hands their values to a builder (an InputError it raises is the app's 422 naming the input).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from fastapi import Query

from app.service.inputs import Input

Built = TypeVar("Built")
Handler = TypeVar("Handler", bound=Callable[..., Any])


def query(item: Input) -> Any:
    """The Query of one input: bounds the framework checks, choices and documented patterns in the schema."""
    settings: dict[str, Any] = {"description": item.description}
    extra: dict[str, Any] = {}
    if item.kind is str:
        settings["max_length"] = item.max_length
        settings["min_length"] = item.min_length
        if item.pattern and item.pattern_rule:
            extra["pattern"] = item.pattern  # the model checks it and says why
        else:
            settings["pattern"] = item.pattern
    else:
        settings["gt" if item.above else "ge"] = item.low
        settings["le"] = item.high
        if item.kind is float:
            settings["allow_inf_nan"] = False
        if item.rule_low is not None:
            extra["minimum"] = item.rule_low  # the endpoint checks it, and its message says why
    if item.choices is not None:
        extra["enum"] = list(item.choices())  # as registered now; the handler reads the registry again
    if item.known is not None:
        extra["enum"] = list(item.known())  # announced; the model checks the value against the engine chosen
    return Query(**settings, json_schema_extra=extra or None)


def parameter(item: Input) -> Any:
    """The input's annotated type: optional where it has no default of its own."""
    kind: Any = item.kind if item.default is not None or item.required else item.kind | None
    return Annotated[kind, query(item)]


def _parameter(item: Input) -> inspect.Parameter:
    return inspect.Parameter(
        item.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=inspect.Parameter.empty if item.required else item.default,
        annotation=parameter(item),
    )


def signature(inputs: Sequence[Input]) -> inspect.Signature:
    return inspect.Signature([_parameter(item) for item in inputs])


def takes(*inputs: Input) -> Callable[[Handler], Handler]:
    """The handler's parameters named as ``inputs`` become those inputs' query parameters (type, bounds,
    description, default); its other parameters (the request) stay as they are.  The handler itself is returned,
    so that it can still be called with its values."""

    def decorate(handler: Handler) -> Handler:
        declared = {item.name: item for item in inputs}
        own = inspect.signature(handler, eval_str=True)
        missing = set(declared) - set(own.parameters)
        assert not missing, f"{handler.__name__} does not take {sorted(missing)}"
        parameters = [
            _parameter(declared[name]) if name in declared else given.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for name, given in own.parameters.items()
        ]
        handler.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
        return handler

    return decorate


def dependency(inputs: Sequence[Input], build: Callable[[Mapping[str, Any]], Built]) -> Callable[..., Built]:
    """A dependency taking ``inputs`` as query parameters and answering ``build`` of their values."""

    def read(**values: Any) -> Built:
        return build(values)  # an InputError is the app's 422 naming the input

    read.__signature__ = signature(inputs)  # type: ignore[attr-defined]
    read.__name__ = read.__qualname__ = f"read_{build.__name__}"
    return read
