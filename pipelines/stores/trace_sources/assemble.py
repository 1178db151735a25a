"""One Trace of the contract from the spans of one trace: the root span and its retrieval, LLM and
tool spans.

Three span vocabularies are read, each as its own instrumentations write it
(docs/how-to/trace-sources/ has the exporter configurations):
- OpenTelemetry GenAI, current: `gen_ai.operation.name` = `retrieval` (documents in
  `gen_ai.retrieval.documents` as `[{id, score}]`, the question in the opt-in
  `gen_ai.retrieval.query.text`), `chat` (`gen_ai.input.messages`, `gen_ai.output.messages`) and
  `execute_tool` (`gen_ai.tool.name`, `gen_ai.tool.call.arguments`);
- OpenTelemetry GenAI, older indexed attributes as OpenLLMetry writes them:
  `gen_ai.prompt.{i}.role/content`, `gen_ai.completion.{i}.content`,
  `gen_ai.completion.{i}.tool_calls.{j}.name/arguments`;
- OpenInference (Phoenix): `openinference.span.kind` RETRIEVER / LLM / TOOL / CHAIN, with
  `retrieval.documents.{i}.document.{id,content,score}`, `llm.input_messages.{i}.message.*`,
  `input.value`, `output.value`, `tool.name` and the call's JSON `input.value` (`tool.parameters`
  when it is no schema).

The row this returns is what the SQL store would return for the trace (JSON fields as Python
values), plus `source_rejection` when the trace cannot be used: then the sampling step quarantines
it under that reason, with whatever could be read, anonymized like every quarantined row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pipelines.core.language import detect_language
from pipelines.core.user_question import NO_RULE, QuestionRule, choose_question
from pipelines.stores.trace_sources.spans import Span, utc_from_ns

SOURCE_REJECTION = "source_rejection"
"""The key of an assembled row that cannot be used: (reason, field, detail), read by the sampling's
parser."""
LANGUAGE_ATTRIBUTES = ("ragwatch.language", "app.language", "user.language", "language")
FEEDBACK_ATTRIBUTES = ("ragwatch.user_feedback", "user_feedback", "user.feedback")
APP_ATTRIBUTES = ("ragwatch.app", "app.name")
CONVERSATION_ATTRIBUTES = ("gen_ai.conversation.id", "session.id")


class ShapeError(ValueError):
    """An attribute holds a value of a shape its convention does not define."""

    def __init__(self, attribute: str, detail: str):
        super().__init__(f"{attribute}: {detail}")
        self.attribute = attribute


def span_role(span: Span) -> str | None:
    """'retrieval', 'llm', 'tool' or None (the root or any other span), in whichever vocabulary the
    span speaks."""
    attributes = span.attributes
    openinference = str(attributes.get("openinference.span.kind") or "").upper()
    if openinference:
        return {"RETRIEVER": "retrieval", "LLM": "llm", "TOOL": "tool"}.get(openinference)
    operation = attributes.get("gen_ai.operation.name")
    if operation == "retrieval":
        return "retrieval"
    if operation in ("chat", "text_completion", "generate_content"):
        return "llm"
    if operation == "execute_tool":
        return "tool"
    if "llm.request.type" in attributes or any(
        k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in attributes
    ):
        return "llm"
    if attributes.get("traceloop.span.kind") == "tool":
        return "tool"
    return None


def root_span(spans: list[Span]) -> Span:
    """The span without a parent (earliest first when a broken tree has several); a span whose
    parent is missing from the export only when no span says it has none."""
    ids = {s.span_id for s in spans}
    orphans = [s for s in spans if not s.parent_span_id or s.parent_span_id not in ids]
    return min(orphans or spans, key=lambda s: (bool(s.parent_span_id), s.start_ns, s.span_id))


def assemble_trace(
    spans: list[Span], *, source: str, question_rule: QuestionRule = NO_RULE
) -> dict[str, Any]:
    """The trace's row in the contract's fields, with `source_rejection` set when it cannot be
    used."""
    spans = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    root = root_span(spans)
    by_role: dict[str, list[Span]] = {"retrieval": [], "llm": [], "tool": []}
    for span in spans:
        if (role := span_role(span)) is not None:
            by_role[role].append(span)
    row: dict[str, Any] = {
        "trace_id": root.trace_id,
        "ts": utc_from_ns(root.start_ns) if root.start_ns else None,
        "question": None,
        "answer": None,
        "contexts": [],
        "tool_calls": [],
        "model": None,
        "app": _app(root),
        "language": None,
        "user_feedback": None,
        "latency_ms": max(0, (root.end_ns - root.start_ns) // 1_000_000) if root.end_ns else None,
        "metadata": _metadata(root, spans, source),
    }
    prompt_rejection = None
    try:
        row["contexts"] = _contexts(by_role["retrieval"])
        documents = [c["text"] for c in row["contexts"] if c["text"]]
        chosen = choose_question(
            _question_candidates(root, spans, by_role, question_rule), documents, question_rule
        )
        row["question"], prompt_rejection = chosen.question, chosen.rejection
        row["answer"], answered_by = _answer(root, by_role["llm"])
        row["tool_calls"] = _tool_calls(by_role["tool"], by_role["llm"])
        row["model"] = _model(by_role["llm"])
        row["user_feedback"] = _feedback(root, spans)
        row["language"] = _language(root, spans, row["question"])
        row["metadata"].update(_evaluated_span(answered_by))
    except ShapeError as exc:
        row["language"] = row["language"] or "und"
        return {**row, SOURCE_REJECTION: ("unknown_attribute_shape", exc.attribute, str(exc)[:300])}
    # A retrieval that found nothing is sampled with no contexts, as from every source: it is a
    # failure to see. The reasons, and their order, are the SQL store's (`parse_row`): a trace is
    # quarantined alike from any source.
    if not row["question"] and prompt_rejection is None:
        rejection = (
            "missing_field",
            "question",
            f"no span of the tree (root {root.name!r}, {len(spans)} spans) holds the user's question",
        )
    elif row["answer"] is None:
        rejection = (
            "missing_field",
            "answer",
            f"no span of the tree (root {root.name!r}) holds the answer",
        )
    elif prompt_rejection is not None:
        rejection = prompt_rejection
    else:
        return row
    return {**row, SOURCE_REJECTION: rejection}


def _app(root: Span) -> str:
    """The app the root names, else the resource's service (not the SDK's `unknown_service`
    placeholder), else the Phoenix project the spans were registered under."""
    service = str(root.resource.get("service.name") or "")
    if service.startswith("unknown_service"):
        service = ""
    return str(
        _first(root, APP_ATTRIBUTES)
        or service
        or root.resource.get("openinference.project.name")
        or "default"
    )


def _first(span: Span, names: tuple[str, ...]) -> Any:
    return next(
        (span.attributes[n] for n in names if span.attributes.get(n) not in (None, "")), None
    )


def _metadata(root: Span, spans: list[Span], source: str) -> dict[str, Any]:
    # The root's span id lets the online eval tie its scores to the span it judged
    # (gen_ai.evaluation.result).
    metadata: dict[str, Any] = {
        "trace_source": source,
        "root_span": root.name,
        "span_id": root.span_id,
        "spans": len(spans),
    }
    if conversation := _first(root, CONVERSATION_ATTRIBUTES):
        metadata["conversation_id"] = str(conversation)
    return metadata


def _question_candidates(
    root: Span, spans: list[Span], by_role: dict[str, list[Span]], rule: QuestionRule
) -> Iterator[tuple[str, str | None]]:
    """Where the user's words may be, most explicit first: the team's own attribute, the retrieval
    query, the root's input, the last user message sent to the model (in a RAG app often the whole
    prompt, which the caller refuses)."""
    if rule.attribute:
        for span in [root, *spans]:
            if span.attributes.get(rule.attribute) not in (None, ""):
                yield rule.attribute, _text(span.attributes[rule.attribute], rule.attribute)
    for span in by_role["retrieval"]:
        if query := span.attributes.get("gen_ai.retrieval.query.text"):
            yield "gen_ai.retrieval.query.text", _text(query, "gen_ai.retrieval.query.text")
        yield "the retrieval span's input.value", _plain_input(span)
    yield "the root span's input", _plain_input(root)
    for span in reversed(by_role["llm"]):
        users = [m for m in _input_messages(span) if m["role"] == "user" and m["content"]]
        if users:
            yield "the last user message", users[-1]["content"]
            return


QUESTION_KEYS = ("question", "query", "input")
ANSWER_KEYS = ("answer", "output", "result")


def _plain_input(span: Span) -> str | None:
    """OpenInference's `input.value`: the text itself, or the usual field of a framework's JSON
    payload (LangChain's `{"input": ..., "chat_history": [...]}`)."""
    return _payload_text(span, "input", QUESTION_KEYS)


def _payload_text(span: Span, kind: str, keys: tuple[str, ...]) -> str | None:
    value = span.attributes.get(f"{kind}.value")
    if not value:
        return None
    if span.attributes.get(f"{kind}.mime_type") != "application/json":
        return _text(value, f"{kind}.value")
    try:
        payload = json.loads(value) if isinstance(value, str) else None
    except json.JSONDecodeError:
        return None  # a framework's payload the app did not mean as the user's words
    if isinstance(payload, dict):
        return next(
            (payload[k] for k in keys if isinstance(payload.get(k), str) and payload[k]), None
        )
    return None


def _answer(root: Span, llm_spans: list[Span]) -> tuple[str | None, Span | None]:
    """What the user saw, and the model span that wrote it: the root's output when it records one,
    else the last model reply."""
    last_llm = max(llm_spans, key=lambda s: (s.end_ns, s.span_id), default=None)
    if (output := _payload_text(root, "output", ANSWER_KEYS)) is not None:
        return output, last_llm
    for span in sorted(llm_spans, key=lambda s: (s.end_ns, s.span_id), reverse=True):
        replies = [m["content"] for m in _output_messages(span) if m["content"] is not None]
        if replies:
            return replies[-1], span
    return None, None


RESPONSE_ID_ATTRIBUTES = ("gen_ai.response.id", "llm.response.id")


def _evaluated_span(span: Span | None) -> dict[str, str]:
    """The model span an evaluation of the answer judges, and its response id: the online eval's
    events name them."""
    if span is None:
        return {}
    evaluated = {"evaluated_span_id": span.span_id}
    if response_id := _first(span, RESPONSE_ID_ATTRIBUTES):
        evaluated["response_id"] = str(response_id)[:200]
    return evaluated


def _text(value: Any, attribute: str) -> str:
    if not isinstance(value, str):
        raise ShapeError(attribute, f"is a {type(value).__name__}, not text")
    return value


def _json(value: Any, attribute: str) -> Any:
    """A structured attribute: OTel attributes cannot nest, so instrumentations serialise them as
    JSON text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ShapeError(attribute, f"is not valid JSON ({exc.msg} at char {exc.pos})") from exc
    return value


def indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`prefix.{i}.rest` attributes as one dict per index i, in index order:
    [{rest: value}, ...]."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        index, _, rest = key[len(prefix) + 1 :].partition(".")
        if not index.isdigit():
            continue
        found.setdefault(int(index), {})[rest] = value
    return [found[i] for i in sorted(found)]


def _message_text(message: dict[str, Any], attribute: str) -> str | None:
    """The text of a GenAI-convention message: its `parts` of type text (or an older flat
    `content`)."""
    if not isinstance(message, dict):
        raise ShapeError(
            attribute, f"holds a {type(message).__name__} where a message object belongs"
        )
    if "parts" in message:
        parts = message["parts"]
        if not isinstance(parts, list):
            raise ShapeError(attribute, "a message's parts are not a list")
        texts = [p.get("content") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
        texts = [t for t in texts if isinstance(t, str)]
        return (
            "\n".join(texts) if texts else None
        )  # an empty reply is still a reply, as in the SQL store
    content = message.get("content")
    return content if isinstance(content, str) else None


def _messages(
    span: Span, structured: str, indexed_prefixes: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Messages as [{role, content, tool_calls}] from the current GenAI attribute, or the indexed
    ones."""
    attributes = span.attributes
    if structured in attributes:
        messages = _json(attributes[structured], structured)
        if not isinstance(messages, list):
            raise ShapeError(structured, f"is a {type(messages).__name__}, not a list of messages")
        return [
            {
                "role": m.get("role") if isinstance(m, dict) else None,
                "content": _message_text(m, structured),
                "tool_calls": _part_tool_calls(m, structured),
            }
            for m in messages
        ]
    for prefix in indexed_prefixes:
        items = indexed(attributes, prefix)
        if not items:
            continue
        inner = (
            "message." if prefix.startswith("llm.") else ""
        )  # OpenInference nests each under `message.`
        return [
            {
                "role": item.get(inner + "role"),
                "content": item.get(inner + "content"),
                "tool_calls": _indexed_tool_calls(item, inner, f"{prefix}.{i}"),
            }
            for i, item in enumerate(items)
        ]
    return []


def _input_messages(span: Span) -> list[dict[str, Any]]:
    return _messages(span, "gen_ai.input.messages", ("gen_ai.prompt", "llm.input_messages"))


def _output_messages(span: Span) -> list[dict[str, Any]]:
    return _messages(span, "gen_ai.output.messages", ("gen_ai.completion", "llm.output_messages"))


def _arguments(value: Any, attribute: str) -> dict[str, Any]:
    if value in (None, ""):
        return {}
    parsed = _json(value, attribute)
    if not isinstance(parsed, dict):
        raise ShapeError(attribute, f"arguments are a {type(parsed).__name__}, not an object")
    return parsed


def _part_tool_calls(message: Any, attribute: str) -> list[dict[str, Any]]:
    if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
        return []
    return [
        {"name": str(p.get("name")), "arguments": _arguments(p.get("arguments"), attribute)}
        for p in message["parts"]
        if isinstance(p, dict) and p.get("type") == "tool_call"
    ]


def _indexed_tool_calls(item: dict[str, Any], inner: str, where: str) -> list[dict[str, Any]]:
    calls = indexed(
        {k[len(inner) :]: v for k, v in item.items() if k.startswith(inner)}, "tool_calls"
    )
    result = []
    for j, call in enumerate(calls):
        name = call.get("name") or call.get("tool_call.function.name")
        arguments = call.get("arguments", call.get("tool_call.function.arguments"))
        if name:
            result.append(
                {
                    "name": str(name),
                    "arguments": _arguments(arguments, f"{where}.tool_calls.{j}.arguments"),
                }
            )
    return result


def _contexts(retrieval_spans: list[Span]) -> list[dict[str, Any]]:
    """Every retrieval span's documents in rank order, span after span; a chunk retrieved twice
    counts once."""
    contexts: list[dict[str, Any]] = []
    seen: set[str] = set()
    for span in retrieval_spans:
        for document in _documents(span):
            if document["chunk_id"] not in seen:
                seen.add(document["chunk_id"])
                contexts.append(document)
    return contexts


def _documents(span: Span) -> list[dict[str, Any]]:
    attribute = "gen_ai.retrieval.documents"
    if attribute in span.attributes:
        documents = _json(span.attributes[attribute], attribute)
        if not isinstance(documents, list) or not all(
            isinstance(d, dict) and d.get("id") not in (None, "") for d in documents
        ):
            raise ShapeError(attribute, "is not a list of {id, score} objects")
        # The convention records ids and scores only; a text is kept when the instrumentation adds
        # one.
        return [
            _document(d.get("id"), d.get("content", d.get("text")), d.get("score"), attribute)
            for d in documents
        ]
    documents = []
    for i, item in enumerate(indexed(span.attributes, "retrieval.documents")):
        where = f"retrieval.documents.{i}.document"
        if item.get("document.id") in (None, ""):
            raise ShapeError(where + ".id", "a retrieved document has no id")
        documents.append(
            _document(
                item["document.id"], item.get("document.content"), item.get("document.score"), where
            )
        )
    return documents


def _document(chunk_id: Any, text: Any, score: Any, attribute: str) -> dict[str, Any]:
    if text is not None and not isinstance(text, str):
        raise ShapeError(attribute, f"a document's text is a {type(text).__name__}")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise ShapeError(attribute, f"a document's score is a {type(score).__name__}, not a number")
    return {
        "chunk_id": str(chunk_id),
        "text": text or "",
        "score": None if score is None else float(score),
    }


def _tool_calls(tool_spans: list[Span], llm_spans: list[Span]) -> list[dict[str, Any]]:
    """The tools executed (tool spans); without tool spans, the calls the model asked for."""
    calls = [_tool_call(span) for span in tool_spans]
    if calls:
        return calls
    return [
        call
        for span in llm_spans
        for message in _output_messages(span)
        for call in message["tool_calls"]
    ]


def _tool_call(span: Span) -> dict[str, Any]:
    """One executed tool's name and arguments, in the span's vocabulary: GenAI (`gen_ai.tool.name`,
    `gen_ai.tool.call.arguments`), OpenInference (`tool.name`; the call's arguments as the JSON
    `input.value`, as its `@tracer.tool` records them, else `tool.parameters` unless that is the
    tool's JSON schema, which the same decorator writes there), OpenLLMetry's @tool decorator
    (`traceloop.entity.name`, `traceloop.entity.input` = `{"args": [...], "kwargs": {...}}`)."""
    attributes = span.attributes
    name = str(
        attributes.get("gen_ai.tool.name")
        or attributes.get("tool.name")
        or attributes.get("traceloop.entity.name")
        or span.name.removeprefix(
            "execute_tool "
        )  # the GenAI convention's span name, `execute_tool {tool name}`
    )
    if "gen_ai.tool.call.arguments" in attributes:
        return {
            "name": name,
            "arguments": _arguments(
                attributes["gen_ai.tool.call.arguments"], "gen_ai.tool.call.arguments"
            ),
        }
    if (payload := _json_input(span)) is not None:
        return {"name": name, "arguments": _arguments(payload, "input.value")}
    if "tool.parameters" in attributes:
        parameters = _arguments(attributes["tool.parameters"], "tool.parameters")
        return {"name": name, "arguments": {} if _is_json_schema(parameters) else parameters}
    if "traceloop.entity.input" in attributes:
        return {
            "name": name,
            "arguments": _decorator_arguments(attributes["traceloop.entity.input"]),
        }
    return {"name": name, "arguments": {}}


def _is_json_schema(value: dict[str, Any]) -> bool:
    """A tool's parameter schema (`{"type": "object", "properties": {...}}`), not the values of a
    call."""
    return value.get("type") == "object" and isinstance(value.get("properties"), dict)


def _decorator_arguments(value: Any) -> dict[str, Any]:
    """OpenLLMetry records a decorated function's call as `{"args": [...], "kwargs": {...}}`: the
    keyword arguments are the tool's arguments; positional ones, whose names the span does not
    carry, are kept under `args`."""
    attribute = "traceloop.entity.input"
    payload = _arguments(value, attribute)
    args, kwargs = payload.get("args") or [], payload.get("kwargs") or {}
    if (
        not isinstance(args, list)
        or not isinstance(kwargs, dict)
        or set(payload) - {"args", "kwargs"}
    ):
        raise ShapeError(attribute, "is not the decorator's {args, kwargs} object")
    return {**kwargs, "args": args} if args else dict(kwargs)


def _json_input(span: Span) -> Any:
    return (
        span.attributes.get("input.value")
        if span.attributes.get("input.mime_type") == "application/json"
        else None
    )


def _model(llm_spans: list[Span]) -> str | None:
    for span in reversed(llm_spans):
        for attribute in ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name"):
            if span.attributes.get(attribute):
                return str(span.attributes[attribute])[:200]
    return None


def _feedback(root: Span, spans: list[Span]) -> int | None:
    for span in [root, *spans]:
        for attribute in FEEDBACK_ATTRIBUTES:
            value = span.attributes.get(attribute)
            if value is None:
                continue
            if isinstance(value, bool) or value not in (-1, 0, 1):
                raise ShapeError(attribute, "user feedback is not -1, 0 or 1")
            return int(value)
    return None


def _language(root: Span, spans: list[Span], question: str | None) -> str:
    """The language the app recorded, else the question's: span exports seldom carry one, and the
    day is stratified by it (a SQL store stratifies by its column, where a null is not recorded)."""
    for span in [root, *spans]:
        value = _first(span, LANGUAGE_ATTRIBUTES)
        if value is not None:
            if not isinstance(value, str) or not 0 < len(value) <= 16:
                raise ShapeError("language", "is not a short language code")
            return value
    return detect_language(question) if question else "und"
