"""Build response models from the model's records: a model declared on a frozen dataclass (``RecordOut``), and a
model filled from result objects whose attributes carry its field names (``filled``)."""

import dataclasses
import re
import typing
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field
from pydantic._internal._model_construction import ModelMetaclass

M = TypeVar("M", bound=BaseModel)


def record_fields(
    record: type,
    name: str,
    descriptions: Mapping[str, str],
    renames: Mapping[str, str],
    omit: Sequence[str],
    own: Sequence[str],
    required: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The annotations and Field()s of a frozen dataclass's fields, as a response names them: each with its type,
    its default (none where ``required``: a response that always carries every field) and its description from
    ``descriptions`` (keyed by the response's name); ``renames`` gives a field another name, ``omit`` leaves fields
    out; ``own`` are the fields the response declares itself."""
    hints = typing.get_type_hints(record)
    strays = (set(renames) | set(omit)) - {item.name for item in dataclasses.fields(record)}
    if strays:
        raise ValueError(f"{name}: renames or omits no field of {record.__name__}: {', '.join(sorted(strays))}")
    annotations: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for item in dataclasses.fields(record):
        if item.name in omit:
            continue
        shown = renames.get(item.name, item.name)
        annotations[shown] = hints[item.name]
        if required:
            values[shown] = Field(description=descriptions.get(shown))
            continue
        if item.default_factory is not dataclasses.MISSING:
            values[shown] = Field(default_factory=item.default_factory, description=descriptions.get(shown))
            continue
        default: Any = item.default if item.default is not dataclasses.MISSING else ...
        values[shown] = Field(default, description=descriptions.get(shown))
    unknown = set(descriptions) - set(annotations) - set(own)
    if unknown:
        raise ValueError(f"{name}: descriptions of no field: {', '.join(sorted(unknown))}")
    return annotations, values


class _RecordMeta(ModelMetaclass):  # pydantic's model metaclass (it exports no public name for it)
    def __new__(
        mcs,
        cls_name: str,
        bases: tuple[type[Any], ...],
        namespace: dict[str, Any],
        record: type | None = None,
        descriptions: Mapping[str, str] | None = None,
        renames: Mapping[str, str] | None = None,
        omit: Sequence[str] = (),
        **kwargs: Any,
    ) -> type:
        # a response that subclasses its record, so that type checkers see the record's fields, carries them all,
        # every one required (it always answers every field); one given as record= keeps the record's defaults
        base = next(
            (item for item in bases if dataclasses.is_dataclass(item) and not issubclass(item, BaseModel)), None
        )
        if base is not None and (record is not None or renames or omit):
            raise ValueError(f"{cls_name}: a response that subclasses {base.__name__} has all its fields")
        record = record or base
        if record is not None:
            own = dict(namespace.get("__annotations__", {}))
            annotations, values = record_fields(
                record, cls_name, descriptions or {}, renames or {}, omit, list(own), required=base is not None
            )
            namespace = {**namespace, **{name: value for name, value in values.items() if name not in own}}
            namespace["__annotations__"] = {**annotations, **own}
        with warnings.catch_warnings():
            if base is not None:
                # the record's derived values (its properties) carried as fields: a property reads the same value
                for name in namespace["__annotations__"]:
                    if isinstance(getattr(base, name, None), property):
                        shadowed = f'Field name "{re.escape(name)}" in ".*" shadows an attribute in parent'
                        warnings.filterwarnings("ignore", shadowed + f' "{re.escape(base.__qualname__)}"')
            made: type = super().__new__(mcs, cls_name, bases, namespace, **kwargs)
        return made


class RecordOut(BaseModel, metaclass=_RecordMeta):
    """A response model on one of the model's frozen dataclasses: ``class XOut(RecordOut, record=X, descriptions=
    {...}, renames={...}, omit=(...))`` has every field of X with its type and default (and the description given
    by the response's name), and the fields its body declares (derived ones, or a field of X with the response's
    own type) after them.  ``class XOut(RecordOut, X, descriptions={...})`` declares the same on X as a base, so
    that a type checker sees X's fields on the response too: every field (no renames or omissions), each required
    (the record's defaults dropped, for a response that always carries every field).  A field the response adds
    under the name of one of X's properties (a derived value) reads through that property, so it must hold the
    property's value (:func:`filled` copies it from there).  A response is no record: it is not hashable, and
    ``dataclasses.replace`` or ``asdict`` do not apply to it."""


def filled(model: type[M], /, *sources: object, **given: Any) -> M:
    """``model`` with the fields in ``given`` as passed and every other field read by name from ``sources``.

    The first source that has the attribute gives it; a field neither given nor in a source is an AttributeError
    naming it (a source's renamed attribute must not read as the model's default).
    """
    values = dict(given)
    for name in model.model_fields:
        if name in values:
            continue
        source = next((source for source in sources if hasattr(source, name)), None)
        if source is None:
            raise AttributeError(f"{model.__name__}.{name}: neither given nor an attribute of its sources")
        values[name] = getattr(source, name)
    return model(**values)
