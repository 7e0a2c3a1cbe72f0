"""Build response models from the model's records: a model made from a frozen dataclass (``record_model``), and a
model filled from result objects whose attributes carry its field names (``filled``)."""

import dataclasses
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field, create_model

M = TypeVar("M", bound=BaseModel)


def record_model(
    record: type,
    /,
    name: str,
    descriptions: Mapping[str, str],
    *,
    renames: Mapping[str, str] | None = None,
    omit: Sequence[str] = (),
    extra: Mapping[str, tuple[Any, Any]] | None = None,
) -> type[BaseModel]:
    """The response model of a frozen dataclass: each of its fields with its type, its default and its description
    from ``descriptions`` (keyed by the name the response uses); ``renames`` gives a field another name in the
    response, ``omit`` leaves fields out, and ``extra`` adds derived fields as (type, Field(...))."""
    hints = typing.get_type_hints(record)
    renamed = dict(renames or {})
    strays = (set(renamed) | set(omit)) - {item.name for item in dataclasses.fields(record)}
    if strays:
        raise ValueError(f"{name}: renames or omits no field of {record.__name__}: {', '.join(sorted(strays))}")
    fields: dict[str, Any] = {}
    for item in dataclasses.fields(record):
        if item.name in omit:
            continue
        shown = renamed.get(item.name, item.name)
        described = descriptions.get(shown)
        if item.default_factory is not dataclasses.MISSING:
            fields[shown] = (hints[item.name], Field(default_factory=item.default_factory, description=described))
            continue
        default: Any = item.default if item.default is not dataclasses.MISSING else ...
        fields[shown] = (hints[item.name], Field(default, description=described))
    unknown = set(descriptions) - set(fields) - set(extra or {})
    if unknown:
        raise ValueError(f"{name}: descriptions of no field: {', '.join(sorted(unknown))}")
    fields.update(extra or {})
    build: Any = create_model  # its typed overloads do not take fields given as a mapping
    model: type[BaseModel] = build(name, **fields)
    return model


def filled(model: type[M], /, *sources: object, **given: Any) -> M:
    """``model`` with the fields in ``given`` as passed and every other field read by name from ``sources``.

    The first source that has the attribute gives it; a field no source has is left to the model's default.
    """
    values = dict(given)
    for name in model.model_fields:
        if name in values:
            continue
        for source in sources:
            if hasattr(source, name):
                values[name] = getattr(source, name)
                break
    return model(**values)
