"""Build a response model from a result object whose attributes carry the model's field names."""

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def filled(model: type[M], source: object, **given: Any) -> M:
    """``model`` with the fields in ``given`` as passed and every other field read from ``source`` by name.

    A field that ``source`` does not have is left to the model's default.
    """
    values = dict(given)
    for name in model.model_fields:
        if name not in values and hasattr(source, name):
            values[name] = getattr(source, name)
    return model(**values)
