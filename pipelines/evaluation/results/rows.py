"""Summary rows made from a result type's own fields, so a row never re-declares (and drifts from)
what it shows.

A run's summary, report and gauges show a few fields of each statistics result (an `Aggregate`, a
`MetricGate`, a `JudgeNoise`), read back from the JSON the results DB keeps. `row_model` builds that
row as a pydantic model from the result's dataclass: the fields named, with the result's types and
defaults; a name that is a property of the result (stored beside its fields by its `to_dict`, e.g.
`JudgeNoise.verdict`) becomes a required field typed by the property's return annotation.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, Field, create_model

RowT = TypeVar("RowT", bound=BaseModel)


def row_model(
    name: str, source: type, fields: tuple[str, ...], *, doc: str, module: str
) -> type[BaseModel]:
    """A pydantic model `name` (in `module`) with `fields` of the dataclass `source`, in that
    order."""
    hints = typing.get_type_hints(source)
    declared = {f.name: f for f in dataclasses.fields(source)}
    definitions: dict[str, Any] = {}
    for field in fields:
        if field in declared:
            definitions[field] = (hints[field], _default(declared[field]))
        elif isinstance(getattr(source, field, None), property):
            definitions[field] = (typing.get_type_hints(getattr(source, field).fget)["return"], ...)
        else:
            raise AttributeError(f"{source.__name__} has no field or property {field!r}")
    return create_model(name, __doc__=doc, __module__=module, **definitions)


def row_from(model: type[RowT], result: Any) -> RowT:
    """The row `model` (made by `row_model`) of one result object: each of its fields read from
    `result`."""
    return model(**{field: getattr(result, field) for field in model.model_fields})


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return Field(default_factory=field.default_factory)
    return ...
