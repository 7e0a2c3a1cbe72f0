"""Response models declared on the model's records: every field of the dataclass with its type and default, renamed,
left out or added only where said."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from pydantic import BaseModel, Field, ValidationError

from app.model.cost.presets import MODELS
from app.model.live.rollout import AcceptanceCheck
from app.service.regimes import SetupRequest, build_setup, model_out
from app.service.schemas.fill import RecordOut, filled
from app.service.schemas.rollout import AcceptanceCheckOut


@dataclass(frozen=True)
class _Estimate:
    value: float | None
    low: float | None
    level: float = 0.95
    internal: str = ""


def test_a_records_fields_become_the_models_with_their_types_defaults_and_descriptions() -> None:
    class EstimateOut(
        RecordOut,
        record=_Estimate,
        descriptions={"point": "The estimate."},
        renames={"value": "point"},
        omit=("internal",),
    ):
        size: int = Field(description="How many.")

    model = EstimateOut
    fields = model.model_fields
    assert list(fields) == ["point", "low", "level", "size"]
    assert fields["point"].description == "The estimate." and fields["point"].is_required()
    assert fields["level"].default == 0.95 and not fields["level"].is_required()
    assert fields["size"].description == "How many."
    assert model.model_validate({"point": None, "low": 0.5, "size": 3}).model_dump() == {
        "point": None,
        "low": 0.5,
        "level": 0.95,
        "size": 3,
    }
    with pytest.raises(ValidationError):
        model.model_validate({"point": "high", "low": None, "size": 1})


def test_a_description_rename_or_omission_of_no_field_is_refused() -> None:
    with pytest.raises(ValueError, match="descriptions of no field: value"):

        class Renamed(RecordOut, record=_Estimate, descriptions={"value": "renamed away"}, renames={"value": "point"}):
            pass

    with pytest.raises(ValueError, match="renames or omits no field of _Estimate: spread"):

        class Omitted(RecordOut, record=_Estimate, omit=("spread",)):
            pass


@dataclass(frozen=True)
class _Listed:
    items: tuple[int, ...]
    notes: list[str] = field(default_factory=list)


def test_a_field_made_by_a_factory_keeps_it_as_its_default() -> None:
    class ListedOut(RecordOut, record=_Listed):
        pass

    model = ListedOut
    assert not model.model_fields["notes"].is_required()
    assert model.model_validate({"items": [1, 2]}).model_dump() == {"items": (1, 2), "notes": []}


def test_the_canary_checks_acceptance_model_holds_every_field_of_the_record() -> None:
    record = {name for name in AcceptanceCheck.__dataclass_fields__}
    assert set(AcceptanceCheckOut.model_fields) == record | {"counts"}


class _Point(BaseModel):
    x: float
    label: str = "none"
    note: str = ""


@dataclass(frozen=True)
class _Source:
    x: float
    label: str


def test_filled_reads_each_field_from_the_first_source_that_has_it_and_refuses_a_field_none_has() -> None:
    made = filled(_Point, _Source(1.5, "first"), _Source(2.0, "second"), note="given")
    assert (made.x, made.label, made.note) == (1.5, "first", "given")
    with pytest.raises(AttributeError, match=r"_Point\.note: neither given nor an attribute of its sources"):
        filled(_Point, _Source(1.5, "first"))  # a default does not stand in for a field no source has


@dataclass(frozen=True)
class _Shape:
    width: int
    height: int = 1

    @property
    def area(self) -> int:
        return self.width * self.height


def test_a_response_on_its_record_as_a_base_has_every_field_required_and_reads_as_the_record() -> None:
    class ShapeOut(RecordOut, _Shape, descriptions={"width": "How wide."}):
        area: int = Field(description="Derived: width x height.")
        key: str

    fields = ShapeOut.model_fields
    assert list(fields) == ["width", "height", "area", "key"]
    assert all(field.is_required() for field in fields.values())  # the record's default is not the response's
    assert fields["width"].description == "How wide." and fields["area"].description == "Derived: width x height."
    shape = _Shape(3, 2)
    made = filled(ShapeOut, shape, key="s")
    assert isinstance(made, _Shape) and made.width == 3 and made.area == 6
    assert made.model_dump() == {"width": 3, "height": 2, "area": 6, "key": "s"}
    with pytest.raises(ValidationError):
        ShapeOut.model_validate({"width": 3, "area": 3, "key": "s"})  # height is required here


def test_a_response_on_its_record_as_a_base_neither_renames_nor_omits() -> None:
    with pytest.raises(ValueError, match="subclasses _Shape has all its fields"):

        class Narrow(RecordOut, _Shape, omit=("height",)):
            pass


def test_a_derived_field_of_a_preset_or_setup_holds_its_records_property() -> None:
    """ModelOut and SetupOut carry the records' derived values as fields under the properties' names; attribute
    access reads the property, so the stored field must be the property's value."""
    for key, model in MODELS.items():
        out = model_out(key, model)
        for name in ("routed_params_b", "shared_params_b", "kv_values_per_token"):
            assert out.model_dump()[name] == getattr(model, name) == getattr(out, name), (key, name)
    built = build_setup(SetupRequest(draft="eagle3"))
    dumped = built.description.model_dump()
    assert dumped["draft_step_overhead_us"] == built.setup.draft_step_overhead_us
    assert dumped["draft"]["kv_values_per_token"] == built.setup.draft.kv_values_per_token
