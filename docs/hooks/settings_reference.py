"""The configuration reference page (reference/configuration.md), generated at build time from
`Settings`.

Each row is a field of `pipelines.core.settings.Settings` (and of its nested models, as
`PARENT__FIELD` variables): the environment variable, its type, its default and the field's
docstring, which pydantic keeps as its description (`use_attribute_docstrings=True`). A field
without one is a build warning, hence an error under `--strict`.
"""

from __future__ import annotations

import logging
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_text import cell, code
from reference_page import add_page

PAGE = "reference/configuration.md"
log = logging.getLogger("mkdocs.plugins.ragwatch.settings_reference")


@dataclass(frozen=True)
class Variable:
    name: str
    type: str
    default: str
    description: str
    section: str  # "" for a top-level setting, else the nested model's variable prefix


def variables() -> Iterator[Variable]:
    """Every setting as the environment variable that sets it, top-level ones first."""
    from pydantic import BaseModel

    from pipelines.core.settings import ENV_PREFIX, Settings

    nested = []
    for name, field in Settings.model_fields.items():
        variable = ENV_PREFIX + name.upper()
        model = (
            field.annotation
            if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
            else None
        )
        yield Variable(
            variable,
            _type_name(field.annotation),
            "see below" if model else _default(field),
            field.description or "",
            "",
        )
        if model is not None:
            nested.append((variable, model))
    for prefix, model in nested:
        for name, field in model.model_fields.items():
            yield Variable(
                f"{prefix}__{name.upper()}",
                _type_name(field.annotation),
                _default(field),
                field.description or "",
                prefix,
            )


def _type_name(annotation) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(repr(value) for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(arg) for arg in typing.get_args(annotation))
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_name(arg) for arg in typing.get_args(annotation))}]"
    return "None" if annotation is type(None) else getattr(annotation, "__name__", str(annotation))


def _default(field) -> str:
    from pydantic import SecretStr
    from pydantic_core import PydanticUndefined

    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "required (each role has its own)"
    else:
        value = field.default
    if isinstance(value, SecretStr):
        return "(secret)"
    if value is None:
        return "unset"
    return code(
        str(value) if not isinstance(value, (list, dict)) else __import__("json").dumps(value)
    )


def render(all_variables: list[Variable]) -> str:
    lines = [
        "# Configuration",
        "",
        (
            "Generated from `pipelines.core.settings.Settings` at build time. Every entry point (CLI, DAG tasks, dvc "
            "stages, tests) reads these environment variables; unset, the defaults keep all state under "
            "`.ragwatch/`. Nested settings take `__` (`RAGWATCH_JUDGE__BASE_URL`); lists and mappings are JSON "
            '(`RAGWATCH_STRATA=\'["app","language"]\'`). An invalid value stops the command with one line per '
            "problem, naming the variable."
        ),
        "",
    ]
    section = None
    for variable in all_variables:
        if variable.section != section:
            section = variable.section
            title = "Settings" if not section else f"`{section}__*`"
            lines += [
                "",
                f"## {title}",
                "",
                "| variable | type | default | meaning |",
                "|---|---|---|---|",
            ]
        lines.append(
            f"| `{variable.name}` | {variable.type} | {variable.default} | "
            f"{cell(variable.description) or '*(undocumented)*'} |"
        )
    return "\n".join(lines) + "\n"


def problems(all_variables: list[Variable]) -> list[str]:
    """One line per setting without a docstring."""
    return [
        f"configuration reference: {v.name} has no docstring in pipelines/core/settings.py"
        for v in all_variables
        if not v.description.strip()
    ]


def on_files(files, config):
    all_variables = list(variables())
    return add_page(files, config, PAGE, render(all_variables), problems(all_variables), log)
