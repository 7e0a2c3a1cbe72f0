"""Build a response model from result objects whose attributes carry the model's field names."""

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


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
