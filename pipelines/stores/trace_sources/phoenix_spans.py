"""Spans exported from Phoenix: the Parquet file of `get_spans_dataframe()` (or of a saved
TraceDataset).

Phoenix's span dataframe has one row a span: `context.trace_id`, `context.span_id`, `parent_id`,
`name`, `span_kind`, `start_time`, `end_time` and one `attributes.<name>` column per OpenInference
attribute, where the indexed attributes come back nested: `attributes.retrieval.documents` is a list
of `{"document.id", "document.content", "document.score"}`, `attributes.llm.input_messages` a list
of `{"message.role", "message.content"}`. Each row is flattened back to the attribute names
OpenInference spans carry (`retrieval.documents.0.document.id`), so these spans assemble by the same
rules as the OTLP files of the `openinference` source. Phoenix parses the attributes OpenInference
defines as JSON strings (`tool.parameters`, `metadata`, `document.metadata`,
`llm.prompt_template.variables`) into objects, which Parquet stores as structs whose fields are the
union over the column: they are written back as JSON, without the null fields that union adds (so a
tool argument sent as null is read as absent). The dataframe has no resource attributes: the file's
name stands for the service, so export each Phoenix project to `<project>.parquet` (the app of its
traces, unless a span sets `ragwatch.app`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipelines.stores.trace_sources.spans import Damage, Span, UnreadableSource, ns_from_time

BATCH_ROWS = 2_000
ATTRIBUTE_PREFIX = "attributes."
JSON_STRING_ATTRIBUTES = (
    "document.metadata",
    "llm.prompt_template.variables",
    "metadata",
    "tool.parameters",
)


def read_phoenix_parquet(path: Path) -> Iterator[Span | Damage]:
    """The spans of one Phoenix span-dataframe Parquet file; a file that is no such Parquet fails
    naming it."""
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow's ArrowInvalid or OSError for a file that is not Parquet
        raise UnreadableSource(
            f"{path}: not a readable Parquet file ({exc}); point RAGWATCH_TRACE_SOURCE_PATH at Phoenix's span export"
        ) from exc
    missing = {"context.trace_id", "context.span_id", "start_time"} - set(file.schema_arrow.names)
    if missing:
        raise UnreadableSource(f"{path}: not a Phoenix span export (no {sorted(missing)} columns)")
    with file:
        for number, batch in enumerate(file.iter_batches(batch_size=BATCH_ROWS)):
            for offset, row in enumerate(batch.to_pylist()):
                try:
                    yield phoenix_span(row, service=path.stem)
                except (TypeError, ValueError) as exc:
                    where = number * BATCH_ROWS + offset + 1
                    yield Damage(
                        str(path),
                        where,
                        "unknown_attribute_shape",
                        f"{path.name} row {where}: {exc}",
                        {str(row.get("context.trace_id")): None},
                    )


def phoenix_span(row: dict[str, Any], *, service: str) -> Span:
    attributes: dict[str, Any] = {}
    for column, value in row.items():
        if column.startswith(ATTRIBUTE_PREFIX):
            _flatten(column[len(ATTRIBUTE_PREFIX) :], value, attributes)
    if row.get("span_kind") and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = str(row["span_kind"])
    start = ns_from_time(row["start_time"], "a span time")
    return Span(
        str(row["context.trace_id"]),
        str(row["context.span_id"]),
        str(row.get("parent_id") or ""),
        str(row.get("name") or ""),
        start,
        ns_from_time(row["end_time"], "a span time") if row.get("end_time") else start,
        attributes,
        {"service.name": service},
    )


def _flatten(name: str, value: Any, into: dict[str, Any]) -> None:
    """Nested values back to OpenInference's flat names; nulls (a column another span kind fills)
    are dropped."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return
    if isinstance(value, dict) and name.endswith(
        JSON_STRING_ATTRIBUTES
    ):  # the suffix rule Phoenix parses them by
        into[name] = json.dumps(_without_nulls(value), ensure_ascii=False)
    elif isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{name}.{key}", inner, into)
    elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
        for index, inner in enumerate(value):
            _flatten(f"{name}.{index}", inner, into)
    else:
        into[name] = value


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_nulls(inner) for key, inner in value.items() if inner is not None}
    if isinstance(value, list):
        return [_without_nulls(inner) for inner in value]
    return value
