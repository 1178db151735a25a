"""Langfuse's scheduled blob-storage export as a trace source: its Parquet or JSONL files, in a
folder or on S3.

Langfuse writes one file per table and time window under `observations_v2/` (enriched observations,
the default), or `traces/` and `observations/` (the legacy source), and always `scores/`. Each
observation becomes a span in the vocabulary the assembler reads, so a Langfuse trace is assembled
by the same rules as an OTLP one:
- GENERATION: its `input` messages and `output` reply (`gen_ai.input.messages` /
  `gen_ai.output.messages`), the model as `provided_model_name`;
- RETRIEVER: its `output` documents (`[{id, content|page_content, score}]`, an id from the
  document's metadata when it has none of its own) and its `input` query;
- TOOL: its name and `input` arguments;
- the trace's root (a legacy `traces/` row, else the observation without a parent): `input` and
  `output` as the question and the answer. An input recorded by Langfuse's `@observe` decorator,
  `{"args": [...], "kwargs": {...}}`, stands for its text keyword argument or its one positional
  text (a root's or a retriever's question), or its keyword arguments (a tool's). A score named like
  user feedback (`FEEDBACK_SCORES`) becomes the trace's `user_feedback` (a BOOLEAN score: 1 is
  thumbs up, 0 thumbs down). App and language come from the trace's metadata (`app`, `language`),
  else the trace name. On S3 (`s3://bucket/prefix`) the files are read with the credentials and
  endpoint of the DVC remote: the standard `AWS_*` variables (docs/how-to/s3.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from pipelines.core.settings import Settings
from pipelines.stores.trace_sources.file_store import FileTraceStore
from pipelines.stores.trace_sources.spans import Damage, Span, UnreadableSource, ns_from_time

TABLES = ("observations_v2", "observations", "traces", "scores")
FEEDBACK_SCORES = ("user_feedback", "user-feedback", "feedback", "thumbs")
SCORE_PARENT = "langfuse-score"
"""The parent id of a score's span: never a real span, so a score is never taken for the trace's
root."""
_TRACE_ID_IN_TEXT = re.compile(r'"trace_id"\s*:\s*"([^"]{1,128})"')
_TIME_IN_TEXT = re.compile(r'"(?:start_time|timestamp)"\s*:\s*"([0-9: .T-]{19,32})')
BATCH_ROWS = 2_000


def langfuse_export_store(settings: Settings, index_dir) -> FileTraceStore:
    import fsspec

    url = str(settings.trace_source_path)
    fs, root = fsspec.core.url_to_fs(url)

    def files() -> list[tuple[str, str]]:
        found = []
        for path in sorted(fs.find(root)):
            table = _table(path)
            if table and path.endswith((".parquet", ".jsonl", ".jsonl.gz")):
                found.append((path, table))
        if not found:
            raise UnreadableSource(
                f"{url}: no Langfuse export files (.parquet or .jsonl under {', '.join(TABLES)}/); "
                "check RAGWATCH_TRACE_SOURCE_PATH"
            )
        return found

    def fingerprints() -> list[tuple[str, int, Any]]:
        result = []
        for path, _ in files():
            info = fs.info(path)
            result.append(
                (
                    path,
                    int(info.get("size") or 0),
                    str(info.get("ETag") or info.get("mtime") or info.get("LastModified")),
                )
            )
        return result

    def read(path: str) -> Iterator[Span | Damage]:
        return read_export_file(fs, path, _table(path))

    return FileTraceStore(
        "langfuse-export",
        fingerprints,
        read,
        index_dir,
        batch_size=settings.trace_batch_size,
        question_rule=settings.question_rule,
    )


def _table(path: str) -> str | None:
    parts = PurePosixPath(path).parts
    return next((t for t in TABLES if t in parts), None)


def read_export_file(fs, path: str, table: str) -> Iterator[Span | Damage]:
    """The spans of one export file; a file that cannot be read at all fails naming it."""
    rows = _parquet_rows(fs, path) if path.endswith(".parquet") else _jsonl_rows(fs, path)
    decoded = 0
    for row in rows:
        if isinstance(row, Damage):
            yield row
            continue
        decoded += 1
        try:
            span = _span(row, table)
        except (KeyError, TypeError, ValueError) as exc:
            yield Damage(
                path,
                decoded,
                "unknown_attribute_shape",
                f"{PurePosixPath(path).name} row {decoded}: {exc}",
                {str(row.get("trace_id") or row.get("id")): None} if isinstance(row, dict) else {},
            )
            continue
        if span is not None:
            yield span


def _parquet_rows(fs, path: str) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        with fs.open(path, "rb") as handle:
            file = pq.ParquetFile(handle)
            for batch in file.iter_batches(batch_size=BATCH_ROWS):
                yield from batch.to_pylist()
    except (
        Exception
    ) as exc:  # pyarrow raises several kinds for a file that is no Parquet (ArrowInvalid, OSError)
        if type(exc).__name__ in ("ArrowInvalid", "ArrowIOError", "OSError"):
            raise UnreadableSource(
                f"{path}: not a readable Parquet file ({exc}); check RAGWATCH_TRACE_SOURCE_PATH"
            ) from exc
        raise


def _jsonl_rows(fs, path: str) -> Iterator[dict[str, Any] | Damage]:
    decoded = damaged = 0
    with fs.open(path, "rb", compression="infer") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError(f"a line holds a {type(row).__name__}, not an object")
            except ValueError as exc:
                damaged += 1
                text = line.decode("utf-8", errors="replace")
                reason = "truncated_file" if not raw.endswith(b"\n") else "unreadable_line"
                starts = {m.group(1): _first_time(text) for m in _TRACE_ID_IN_TEXT.finditer(text)}
                yield Damage(
                    path,
                    number,
                    reason,
                    f"{PurePosixPath(path).name} line {number}: {str(exc)[:160]}",
                    starts,
                )
                continue
            decoded += 1
            yield row
    if damaged and not decoded:
        raise UnreadableSource(
            f"{path}: no line is a JSON object of a Langfuse export; check RAGWATCH_TRACE_SOURCE_PATH"
        )


def _first_time(text: str) -> int | None:
    match = _TIME_IN_TEXT.search(text)
    try:
        return _ns(match.group(1)) if match else None
    except ValueError:
        return None


def _ns(value: Any) -> int:
    """Langfuse's timestamps ("2024-05-29 13:46:19.963000", UTC) or Parquet's, as nanoseconds since
    the epoch."""
    return ns_from_time(value, "a timestamp")


def _loads(value: Any) -> Any:
    """Langfuse's `input`, `output` and `metadata` are JSON text in its exports, or plain text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _span(row: dict[str, Any], table: str) -> Span | None:
    if table == "scores":
        return _score_span(row)
    if table == "traces":
        start = _ns(row["timestamp"])
        return Span(
            str(row["id"]),
            f"trace:{row['id']}",
            "",
            str(row.get("name") or "trace"),
            start,
            start,
            _root_attributes(row, row.get("name")),
            {},
        )
    start = _ns(row["start_time"])
    end = _ns(row["end_time"]) if row.get("end_time") else start
    parent = row.get("parent_observation_id") or ""
    if table == "observations" and not parent:
        # the legacy traces/ row is the root: its observations hang from it
        parent = f"trace:{row['trace_id']}"
    kind = str(row.get("type") or "SPAN").upper()
    attributes = _observation_attributes(row, kind)
    if not parent:
        attributes.update(_root_attributes(row, row.get("trace_name")))
    return Span(
        str(row["trace_id"]),
        str(row["id"]),
        str(parent),
        str(row.get("name") or kind.lower()),
        start,
        end,
        attributes,
        {},
    )


def _root_attributes(row: dict[str, Any], name: Any) -> dict[str, Any]:
    metadata = _loads(row.get("metadata")) or {}
    metadata = metadata if isinstance(metadata, dict) else {}
    attributes: dict[str, Any] = {
        "ragwatch.app": str(metadata.get("app") or name or row.get("environment") or "default")
    }
    if isinstance(metadata.get("language"), str):
        attributes["ragwatch.language"] = metadata["language"]
    if row.get("session_id"):
        attributes["session.id"] = str(row["session_id"])
    question, answer = _text_of(_loads(row.get("input"))), _text_of(_loads(row.get("output")))
    if question is not None:
        attributes["input.value"] = question
    if answer is not None:
        attributes["output.value"] = answer
    return attributes


def _text_of(value: Any) -> str | None:
    """The text an input or output stands for: itself, the usual field of a framework's payload, or
    the call an `@observe`d function records (`{"args": [...], "kwargs": {...}}`): its text keyword
    argument, else its one positional argument when that is a text (of several, which one is the
    question cannot be told)."""
    if isinstance(value, str):
        return value
    if _is_decorated_call(value):
        args = value["args"]
        return _text_of(value["kwargs"]) or (
            args[0] if len(args) == 1 and isinstance(args[0], str) else None
        )
    if isinstance(value, dict):
        for key in ("question", "query", "input", "answer", "output", "content", "text"):
            if isinstance(value.get(key), str):
                return value[key]
    return None


def _is_decorated_call(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"args", "kwargs"}
        and isinstance(value["args"], list)
        and isinstance(value["kwargs"], dict)
    )


def _tool_arguments(value: Any) -> str:
    """A TOOL's `input` as the call's arguments: an `@observe`d tool's keyword arguments (its
    positional ones, whose names the export does not carry, kept under `args`), or the object the
    app recorded."""
    if _is_decorated_call(value):
        args, kwargs = value["args"], value["kwargs"]
        value = {**kwargs, "args": args} if args else kwargs
    return json.dumps(value) if isinstance(value, dict) else str(value or "")


def _observation_attributes(row: dict[str, Any], kind: str) -> dict[str, Any]:
    if kind == "GENERATION":
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(_messages(_loads(row.get("input")))),
            "gen_ai.output.messages": json.dumps(
                _messages(_loads(row.get("output")), role="assistant")
            ),
        }
        model = row.get("provided_model_name") or row.get("model")
        if model:
            attributes["gen_ai.response.model"] = str(model)
        return attributes
    if kind == "RETRIEVER":
        output = _loads(row.get("output"))
        attributes = {"gen_ai.operation.name": "retrieval"}
        query = _text_of(_loads(row.get("input")))
        if query:
            attributes["gen_ai.retrieval.query.text"] = query
        if output not in (None, ""):
            attributes["gen_ai.retrieval.documents"] = json.dumps(_documents(output))
        return attributes
    if kind == "TOOL":
        return {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": str(row.get("name") or "tool"),
            "gen_ai.tool.call.arguments": _tool_arguments(_loads(row.get("input"))),
        }
    return {}


def _messages(value: Any, role: str = "user") -> Any:
    """Chat messages as the assembler reads them ([{role, content}]); a bare text is one message of
    `role`. Any other shape is passed on as it is, so the assembler names it as an unknown attribute
    shape."""
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, dict) and "role" in value:
        return [value]
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        return value["messages"]
    return value if value is not None else []


def _documents(output: Any) -> Any:
    """Retrieved documents as `[{id, content, score}]`; a shape without ids is passed on for the
    assembler to reject."""
    documents = output.get("documents") if isinstance(output, dict) else output
    if not isinstance(documents, list):
        return output
    result = []
    for document in documents:
        if not isinstance(document, dict):
            return output
        metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
        chunk_id = document.get("id") or metadata.get("chunk_id") or metadata.get("id")
        result.append(
            {
                "id": chunk_id,
                "content": document.get("content", document.get("page_content")),
                "score": document.get("score", metadata.get("score")),
            }
        )
    return result


def _score_span(row: dict[str, Any]) -> Span | None:
    if str(row.get("name") or "").lower() not in FEEDBACK_SCORES or row.get("value") is None:
        return None
    value = float(row["value"])
    if str(row.get("data_type") or "").upper() == "BOOLEAN":
        value = 1 if value else -1
    feedback: Any = (
        int(value) if value in (-1, 0, 1) else value
    )  # another scale: the assembler names the shape
    start = _ns(row["timestamp"])
    return Span(
        str(row["trace_id"]),
        f"score:{row.get('id')}",
        SCORE_PARENT,
        "score",
        start,
        start,
        {"ragwatch.user_feedback": feedback},
        {},
    )
