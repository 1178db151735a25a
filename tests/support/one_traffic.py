"""One logical traffic of a RAG assistant, written as each trace source holds it.

Every turn is one trace, with the same 32-hex trace id, start time and duration in every source:
- `sql`: one row of the trace table, as the app writes it;
- `otlp-genai`: the current GenAI conventions (`retrieval`, `chat`, `execute_tool` spans with
  `gen_ai.input.messages`, `gen_ai.retrieval.documents`), as OpenTelemetry's instrumentations and
  the otlp page's snippet write them;
- `otlp-openllmetry`: OpenLLMetry 0.54's chat spans (`gen_ai.prompt.{i}.*`,
  `gen_ai.completion.{i}.*`) and its `@tool` spans (`traceloop.entity.*`) under the page's hand-made
  GenAI retrieval span;
- `openinference`: OpenInference CHAIN / RETRIEVER / TOOL / LLM spans, their attributes made by
  `openinference.instrumentation`'s own helpers (what its `OITracer` decorators and instrumentors
  write);
- `phoenix`: those spans as Phoenix's span dataframe, saved to Parquet;
- `langfuse-export`: Langfuse's blob-storage export (`observations_v2/`, `scores/`) of an app traced
  with its `@observe` decorator (inputs as `{"args": [...], "kwargs": {...}}`) and its OpenAI
  integration. Span files are written by the OpenTelemetry SDK through `OtlpJsonFileExporter`, as
  the Collector's file exporter writes them. Attribute names come from the libraries' own constants,
  so a renamed attribute breaks this module.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from openinference.instrumentation import (
    OITracer,
    TraceConfig,
    get_input_attributes,
    get_llm_attributes,
    get_output_attributes,
    get_retriever_attributes,
    get_tool_attributes,
)
from openinference.semconv.resource import ResourceAttributes
from openinference.semconv.trace import OpenInferenceSpanKindValues
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as genai
from opentelemetry.semconv_ai import LLMRequestTypeValues, SpanAttributes, TraceloopSpanKindValues
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

from pipelines.core.agent_tools import TOOLS
from pipelines.core.settings import Settings
from pipelines.stores.trace_sources.otlp_file_exporter import OtlpJsonFileExporter
from pipelines.stores.trace_sources.spans import Span, read_otlp_json
from pipelines.stores.traces import TraceStore

DAY = date(2026, 11, 18)
APP = "docs-bot"
MODEL = "gen-model"
SYSTEM = "Answer from the contexts only. Say so when they do not hold the answer."
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
PHOENIX_JSON_STRING_ATTRIBUTES = (
    "document.metadata",
    "llm.prompt_template.variables",
    "metadata",
    "tool.parameters",
)


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    text: str
    score: float


@dataclass(frozen=True)
class Turn:
    name: str
    minute: int
    question: str
    answer: str | None
    """None: the model call failed and the user saw nothing."""
    chunks: tuple[Chunk, ...] = ()
    """What the retrieval found, in rank order; empty: it ran and found nothing."""
    tool: tuple[str, dict[str, Any]] | None = None
    """The tool the agent called first (name, arguments)."""
    language: str | None = None
    """What the app recorded; None: it recorded none."""
    feedback: int | None = None
    latency_ms: int = 1_500
    words_recorded: bool = True
    """False: the app recorded only the filled prompt, neither the retrieval's query nor the
    request's input."""
    quarantined_as: str | None = None
    """The reason every source must quarantine the trace under; None: sampled."""

    @property
    def trace_id(self) -> str:
        return hashlib.sha256(f"one-traffic/{self.name}".encode()).hexdigest()[:32]

    @property
    def start(self) -> datetime:
        return datetime.combine(DAY, datetime.min.time(), tzinfo=timezone.utc) + timedelta(
            hours=9, minutes=self.minute
        )

    def at(self, fraction: float) -> int:
        """Nanoseconds since the epoch, `fraction` of the way through the turn."""
        start = (self.start - EPOCH) // timedelta(microseconds=1) * 1_000
        return start + round(fraction * self.latency_ms * 1_000_000)

    @property
    def prompt(self) -> str:
        """The filled RAG template sent to the model as the user message."""
        context = "\n\n".join(c.text for c in self.chunks) or "(no documents found)"
        return f"Context:\n{context}\n\nQuestion: {self.question}"

    @property
    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": self.prompt}]


PORTS = Chunk(
    "ops-ports#1",
    "Qdrant listens on port 6333 for the REST API. The gRPC interface uses port 6334.",
    0.83,
)
SNAPSHOTS = Chunk(
    "ops-snapshots#1", "Snapshots are written to the snapshots folder of each node.", 0.41
)
BACKUPS = Chunk(
    "ops-backups#2", "Backups run every night at 02:00 UTC and are kept for 14 days.", 0.77
)
COPIAS = Chunk(
    "es-copias#1",
    "Las copias de seguridad se hacen cada noche y se guardan durante catorce días.",
    0.88,
)

TURNS = (
    Turn(
        "rag-en",
        1,
        "Which port does Qdrant use for the REST API?",
        "Qdrant serves its REST API on port 6333.",
        (PORTS, SNAPSHOTS),
        language="en",
        feedback=1,
        latency_ms=1_234,
    ),
    Turn(
        "rag-es",
        2,
        "¿Cuánto tiempo se guardan las copias de seguridad?",
        "Se guardan durante catorce días.",
        (COPIAS,),
        feedback=-1,
        latency_ms=2_051,
    ),
    Turn(
        "agent",
        3,
        "How long are nightly backups kept?",
        "Nightly backups are kept for 14 days.",
        (BACKUPS,),
        tool=("vector_search", {"query": "nightly backup retention", "top_k": 3}),
        language="en",
        feedback=0,
        latency_ms=3_310,
    ),
    Turn(
        "empty-retrieval",
        4,
        "Where do the edge nodes write their crash dumps?",
        "The documentation does not say where crash dumps are written.",
        (),
        language="en",
        latency_ms=987,
    ),
    Turn(
        "prompt-only",
        5,
        "How often do backups run?",
        "Every night at 02:00 UTC.",
        (BACKUPS,),
        language="en",
        words_recorded=False,
        quarantined_as="question_is_prompt",
    ),
    Turn(
        "no-answer",
        6,
        "¿En qué puerto escucha la API REST?",
        None,
        (PORTS,),
        language="es",
        quarantined_as="missing_field",
    ),
    Turn(
        "prompt-only-no-answer",
        7,
        "Which port does gRPC use?",
        None,
        (PORTS,),
        words_recorded=False,
        quarantined_as="missing_field",
    ),
)
TOOL_RESULT = [{"chunk_id": BACKUPS.chunk_id}]


# --- SQL ------------------------------------------------------------------------------------------


def sql_row(turn: Turn) -> dict[str, Any]:
    return {
        "trace_id": turn.trace_id,
        "ts": turn.start,
        "question": turn.question if turn.words_recorded else turn.prompt,
        "answer": turn.answer,
        "contexts": [
            {"chunk_id": c.chunk_id, "text": c.text, "score": c.score} for c in turn.chunks
        ],
        "tool_calls": [{"name": turn.tool[0], "arguments": turn.tool[1]}] if turn.tool else [],
        "model": MODEL,
        "app": APP,
        "language": turn.language,
        "user_feedback": turn.feedback,
        "latency_ms": turn.latency_ms,
        "metadata": {},
    }


def write_sql(settings: Settings, turns: tuple[Turn, ...] = TURNS) -> None:
    store = TraceStore.from_settings(settings, read_only=False)
    store.create_table()
    store.insert_rows(sql_row(t) for t in turns)


# --- span files -----------------------------------------------------------------------------------


class _TurnIds(IdGenerator):
    """The turn's trace id, and span ids counted from it, so every run writes the same ids."""

    def __init__(self):
        self.trace_id = 0
        self.count = 0

    def generate_trace_id(self) -> int:
        return self.trace_id

    def generate_span_id(self) -> int:
        self.count += 1
        return (
            int(hashlib.sha256(f"{self.trace_id}/{self.count}".encode()).hexdigest()[:16], 16) or 1
        )


def _span_file(path: Path, resource: dict[str, Any], ids: _TurnIds) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create(resource), id_generator=ids)
    # Small batches: a trace's spans land in several lines, as a busy app's batch processor cuts
    # them.
    provider.add_span_processor(
        BatchSpanProcessor(OtlpJsonFileExporter(path), max_export_batch_size=3)
    )
    return provider


def _root_attributes(turn: Turn) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    if turn.language:
        attributes["ragwatch.language"] = turn.language
    if turn.feedback is not None:
        attributes["ragwatch.user_feedback"] = turn.feedback
    return attributes


def _genai_retrieval(tracer, turn: Turn, context, *, empty_as_absent: bool) -> None:
    """The GenAI `retrieval` span the otlp page's snippet records (documents with their text as
    `content`)."""
    attributes: dict[str, Any] = {
        genai.GEN_AI_OPERATION_NAME: genai.GenAiOperationNameValues.RETRIEVAL.value,
        genai.GEN_AI_DATA_SOURCE_ID: "docs",
    }
    if turn.words_recorded:
        attributes[genai.GEN_AI_RETRIEVAL_QUERY_TEXT] = turn.question
    if turn.chunks or not empty_as_absent:
        attributes[genai.GEN_AI_RETRIEVAL_DOCUMENTS] = json.dumps(
            [{"id": c.chunk_id, "score": c.score, "content": c.text} for c in turn.chunks],
            ensure_ascii=False,
        )
    span = tracer.start_span(
        "retrieval docs",
        context=context,
        kind=SpanKind.CLIENT,
        start_time=turn.at(0.30),
        attributes=attributes,
    )
    span.end(end_time=turn.at(0.45))


def _failed(span) -> None:
    span.set_status(Status(StatusCode.ERROR, "Request timed out."))
    span.set_attribute("error.type", "APITimeoutError")


def _genai_text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def write_genai_otlp(path: Path, turns: tuple[Turn, ...] = TURNS) -> None:
    """The current GenAI conventions, as `opentelemetry-instrumentation-openai-v2` (latest
    conventions, content captured on spans) records the model calls, and the otlp page's snippet the
    request and the retrieval."""
    ids = _TurnIds()
    provider = _span_file(path, {"service.name": APP}, ids)
    tracer = provider.get_tracer("docs-bot")
    for turn in turns:
        ids.trace_id = int(turn.trace_id, 16)
        root = tracer.start_span(
            "rag.request", start_time=turn.at(0), attributes=_root_attributes(turn)
        )
        context = set_span_in_context(root)
        if turn.tool:
            name, arguments = turn.tool
            choice = _genai_chat(
                tracer, context, turn, 0.05, 0.20, [_genai_text("user", turn.question)]
            )
            choice.set_attribute(
                genai.GEN_AI_OUTPUT_MESSAGES,
                json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "id": "call_1",
                                    "name": name,
                                    "arguments": arguments,
                                }
                            ],
                            "finish_reason": "tool_call",
                        }
                    ]
                ),
            )
            choice.end(end_time=turn.at(0.20))
            tool = tracer.start_span(
                f"execute_tool {name}",
                context=context,
                start_time=turn.at(0.21),
                attributes={
                    genai.GEN_AI_OPERATION_NAME: genai.GenAiOperationNameValues.EXECUTE_TOOL.value,
                    genai.GEN_AI_TOOL_NAME: name,
                    genai.GEN_AI_TOOL_CALL_ID: "call_1",
                    genai.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps(arguments),
                    "gen_ai.tool.type": "function",
                },
            )
            tool.end(end_time=turn.at(0.29))
        _genai_retrieval(tracer, turn, context, empty_as_absent=False)
        chat = _genai_chat(
            tracer,
            context,
            turn,
            0.46,
            0.98,
            [_genai_text(m["role"], m["content"]) for m in turn.messages],
        )
        if turn.answer is None:
            _failed(chat)
        else:
            chat.set_attribute(genai.GEN_AI_RESPONSE_ID, f"chatcmpl-{turn.name}")
            chat.set_attribute(
                genai.GEN_AI_OUTPUT_MESSAGES,
                json.dumps(
                    [{**_genai_text("assistant", turn.answer), "finish_reason": "stop"}],
                    ensure_ascii=False,
                ),
            )
        chat.end(end_time=turn.at(0.98))
        root.end(end_time=turn.at(1))
    provider.shutdown()


def _genai_chat(tracer, context, turn: Turn, start: float, end: float, messages: list[dict]):
    span = tracer.start_span(
        f"chat {MODEL}",
        context=context,
        kind=SpanKind.CLIENT,
        start_time=turn.at(start),
        attributes={
            genai.GEN_AI_OPERATION_NAME: genai.GenAiOperationNameValues.CHAT.value,
            genai.GEN_AI_PROVIDER_NAME: "openai",
            genai.GEN_AI_REQUEST_MODEL: MODEL,
            genai.GEN_AI_INPUT_MESSAGES: json.dumps(messages, ensure_ascii=False),
        },
    )
    span.set_attribute(genai.GEN_AI_RESPONSE_MODEL, MODEL)
    return span


def write_openllmetry_otlp(path: Path, turns: tuple[Turn, ...] = TURNS) -> None:
    """OpenLLMetry 0.54's OpenAI instrumentation (`openai.chat` spans with the indexed
    `gen_ai.prompt.{i}` / `gen_ai.completion.{i}`) and its `@tool` decorator
    (`traceloop.entity.input` = `{"args", "kwargs"}`), under the otlp page's root and GenAI
    retrieval span; an empty retrieval records no documents attribute at all."""
    ids = _TurnIds()
    provider = _span_file(path, {"service.name": APP}, ids)
    tracer = provider.get_tracer("docs-bot")
    for turn in turns:
        ids.trace_id = int(turn.trace_id, 16)
        root = tracer.start_span(
            "rag.request", start_time=turn.at(0), attributes=_root_attributes(turn)
        )
        context = set_span_in_context(root)
        if turn.tool:
            name, arguments = turn.tool
            choice = _openllmetry_chat(
                tracer, context, turn, 0.05, [{"role": "user", "content": turn.question}]
            )
            prefix = f"{SpanAttributes.LLM_COMPLETIONS}.0"
            choice.set_attributes(
                {
                    f"{prefix}.finish_reason": "tool_calls",
                    f"{prefix}.role": "assistant",
                    f"{prefix}.tool_calls.0.id": "call_1",
                    f"{prefix}.tool_calls.0.name": name,
                    f"{prefix}.tool_calls.0.arguments": json.dumps(arguments),
                }
            )
            choice.end(end_time=turn.at(0.20))
            tool = tracer.start_span(
                f"{name}.{TraceloopSpanKindValues.TOOL.value}",
                context=context,
                start_time=turn.at(0.21),
                attributes={
                    SpanAttributes.TRACELOOP_SPAN_KIND: TraceloopSpanKindValues.TOOL.value,
                    SpanAttributes.TRACELOOP_ENTITY_NAME: name,
                    SpanAttributes.TRACELOOP_ENTITY_PATH: "",
                    SpanAttributes.TRACELOOP_ENTITY_INPUT: json.dumps(
                        {"args": [], "kwargs": arguments}
                    ),
                    SpanAttributes.TRACELOOP_ENTITY_OUTPUT: json.dumps(TOOL_RESULT),
                },
            )
            tool.end(end_time=turn.at(0.29))
        _genai_retrieval(tracer, turn, context, empty_as_absent=True)
        chat = _openllmetry_chat(tracer, context, turn, 0.46, turn.messages)
        if turn.answer is None:
            _failed(chat)
        else:
            prefix = f"{SpanAttributes.LLM_COMPLETIONS}.0"
            chat.set_attributes(
                {
                    genai.GEN_AI_RESPONSE_ID: f"chatcmpl-{turn.name}",
                    f"{prefix}.finish_reason": "stop",
                    f"{prefix}.role": "assistant",
                    f"{prefix}.content": turn.answer,
                }
            )
        chat.end(end_time=turn.at(0.98))
        root.end(end_time=turn.at(1))
    provider.shutdown()


def _openllmetry_chat(tracer, context, turn: Turn, start: float, messages: list[dict]):
    attributes: dict[str, Any] = {
        SpanAttributes.LLM_REQUEST_TYPE: LLMRequestTypeValues.CHAT.value,
        genai.GEN_AI_SYSTEM: "openai",
        genai.GEN_AI_REQUEST_MODEL: MODEL,
        SpanAttributes.LLM_IS_STREAMING: False,
    }
    for i, message in enumerate(messages):
        attributes[f"{SpanAttributes.LLM_PROMPTS}.{i}.role"] = message["role"]
        attributes[f"{SpanAttributes.LLM_PROMPTS}.{i}.content"] = message["content"]
    span = tracer.start_span(
        "openai.chat",
        context=context,
        kind=SpanKind.CLIENT,
        start_time=turn.at(start),
        attributes=attributes,
    )
    span.set_attribute(genai.GEN_AI_RESPONSE_MODEL, MODEL)
    return span


def write_openinference_otlp(path: Path, turns: tuple[Turn, ...] = TURNS) -> None:
    """OpenInference spans as Phoenix's `register(project_name=...)` exports them: a CHAIN root with
    the request's `input.value` / `output.value`, a TOOL span as `@tracer.tool` writes it
    (`tool.parameters` the function's JSON schema, the call's arguments as `input.value`), a
    RETRIEVER with its `retrieval.documents` and the LLM spans."""
    ids = _TurnIds()
    provider = _span_file(path, {ResourceAttributes.PROJECT_NAME: APP}, ids)
    tracer = OITracer(provider.get_tracer("docs-bot"), TraceConfig())
    kinds = OpenInferenceSpanKindValues
    for turn in turns:
        ids.trace_id = int(turn.trace_id, 16)
        attributes = {
            **_root_attributes(turn),
            **(get_input_attributes(turn.question) if turn.words_recorded else {}),
        }
        root = tracer.start_span(
            "rag", openinference_span_kind=kinds.CHAIN, start_time=turn.at(0), attributes=attributes
        )
        context = set_span_in_context(root)
        if turn.tool:
            name, arguments = turn.tool
            choice = tracer.start_span(
                "ChatCompletion",
                context=context,
                openinference_span_kind=kinds.LLM,
                start_time=turn.at(0.05),
                attributes=get_llm_attributes(
                    provider="openai",
                    system="openai",
                    model_name=MODEL,
                    input_messages=[{"role": "user", "content": turn.question}],
                    output_messages=[
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "function": {"name": name, "arguments": json.dumps(arguments)},
                                }
                            ],
                        }
                    ],
                ),
            )
            choice.end(end_time=turn.at(0.20))
            spec = next(t["function"] for t in TOOLS if t["function"]["name"] == name)
            tool = tracer.start_span(
                name,
                context=context,
                openinference_span_kind=kinds.TOOL,
                start_time=turn.at(0.21),
                attributes={
                    **get_input_attributes(arguments),
                    **get_tool_attributes(
                        name=name, description=spec["description"], parameters=spec["parameters"]
                    ),
                    **get_output_attributes(TOOL_RESULT),
                },
            )
            tool.end(end_time=turn.at(0.29))
        retriever = tracer.start_span(
            "retrieve",
            context=context,
            openinference_span_kind=kinds.RETRIEVER,
            start_time=turn.at(0.30),
            attributes={
                **(get_input_attributes(turn.question) if turn.words_recorded else {}),
                **get_retriever_attributes(
                    documents=[
                        {"id": c.chunk_id, "content": c.text, "score": c.score} for c in turn.chunks
                    ]
                ),
            },
        )
        retriever.end(end_time=turn.at(0.45))
        llm = tracer.start_span(
            "ChatCompletion",
            context=context,
            openinference_span_kind=kinds.LLM,
            start_time=turn.at(0.46),
            attributes=get_llm_attributes(
                provider="openai",
                system="openai",
                model_name=MODEL,
                input_messages=turn.messages,
                output_messages=[{"role": "assistant", "content": turn.answer}]
                if turn.answer is not None
                else None,
            ),
        )
        if turn.answer is None:
            _failed(llm)
        else:
            root.set_attributes(get_output_attributes(turn.answer))
        llm.end(end_time=turn.at(0.98))
        root.end(end_time=turn.at(1))
    provider.shutdown()


def write_phoenix_parquet(otlp_path: Path, parquet_path: Path) -> None:
    """The spans of an OpenInference OTLP file as Phoenix's `get_spans_dataframe()` returns them,
    saved to Parquet."""
    import pandas as pd

    spans = [s for s in read_otlp_json(otlp_path) if isinstance(s, Span)]
    frame = pd.DataFrame(phoenix_frame(spans))
    parquet_path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(parquet_path)


def phoenix_frame(spans: list[Span]) -> list[dict]:
    """Spans as Phoenix's get_spans_dataframe() lays them out: context.* columns, span_kind, and one
    attributes.* column per attribute, the indexed ones nested back into lists of dicts, the ones
    Phoenix's ingestion takes for JSON strings (PHOENIX_JSON_STRING_ATTRIBUTES) parsed to
    objects."""

    def nest(flat: dict) -> dict:
        out: dict = {}
        lists: dict = {}
        for key, value in flat.items():
            parts = key.split(".")
            index = next((i for i, p in enumerate(parts) if p.isdigit()), None)
            if index is None:
                json_object = key.endswith(PHOENIX_JSON_STRING_ATTRIBUTES) and str(
                    value
                ).startswith("{")
                out[key] = json.loads(value) if json_object else value
            else:
                lists.setdefault(".".join(parts[:index]), {}).setdefault(int(parts[index]), {})[
                    ".".join(parts[index + 1 :])
                ] = value
        for name, items in lists.items():
            out[name] = [nest(items[i]) for i in sorted(items)]
        return out

    rows = []
    for span in spans:
        row = {
            "context.trace_id": span.trace_id,
            "context.span_id": span.span_id,
            "parent_id": span.parent_span_id or None,
            "name": span.name,
            "span_kind": span.attributes.get("openinference.span.kind", "UNKNOWN"),
            "start_time": datetime.fromtimestamp(span.start_ns / 1e9, tz=timezone.utc),
            "end_time": datetime.fromtimestamp(span.end_ns / 1e9, tz=timezone.utc),
        }
        row.update({f"attributes.{k}": v for k, v in nest(span.attributes).items()})
        rows.append(row)
    return rows


# --- Langfuse export ------------------------------------------------------------------------------


def _stamp(ns: int) -> str:
    """Langfuse's export timestamp: UTC, to the microsecond."""
    return (EPOCH + timedelta(microseconds=ns // 1_000)).strftime("%Y-%m-%d %H:%M:%S.%f")


def _decorated(*args: Any, **kwargs: Any) -> str:
    """An `@observe`d function's input as Langfuse records it."""
    return json.dumps({"args": list(args), "kwargs": kwargs}, ensure_ascii=False)


def _observation(
    turn: Turn, oid: str, kind: str, name: str, start: float, end: float, **fields: Any
) -> dict:
    """One row of `observations_v2/`, with the trace context the enriched export repeats on each
    row."""
    trace = turn.trace_id
    return {
        "id": f"{trace[:16]}-{oid}",
        "trace_id": trace,
        "project_id": "p1",
        "environment": "production",
        "type": kind,
        "parent_observation_id": None if oid == "root" else f"{trace[:16]}-root",
        "start_time": _stamp(turn.at(start)),
        "end_time": _stamp(turn.at(end)),
        "name": name,
        "metadata": json.dumps(fields.pop("metadata", {})),
        "input": fields.pop("input", None),
        "output": fields.pop("output", None),
        "level": fields.pop("level", "DEFAULT"),
        "provided_model_name": fields.pop("model", None),
        "user_id": "u-1",
        "session_id": "s-1",
        "trace_name": APP,
        **fields,
    }


def langfuse_rows(turns: tuple[Turn, ...] = TURNS) -> tuple[list[dict], list[dict]]:
    """(observations_v2 rows, scores rows) of an app whose `answer(question)`, `search(question)`
    and `vector_search(query=..., top_k=...)` are `@observe`d (the last two as_type retriever and
    tool), its model called through `langfuse.openai`; the app sets the trace's language in its
    metadata and sends thumbs as scores."""
    observations: list[dict] = []
    scores: list[dict] = []
    for turn in turns:
        observation = partial(_observation, turn)
        observations.append(
            observation(
                "root",
                "SPAN",
                "answer",
                0,
                1,
                input=_decorated(turn.question) if turn.words_recorded else None,
                output=json.dumps(turn.answer, ensure_ascii=False)
                if turn.answer is not None
                else None,
                metadata={"language": turn.language} if turn.language else {},
                level="DEFAULT" if turn.answer is not None else "ERROR",
            )
        )
        if turn.tool:
            name, arguments = turn.tool
            observations.append(
                observation(
                    "choice",
                    "GENERATION",
                    "OpenAI-generation",
                    0.05,
                    0.20,
                    model=MODEL,
                    input=json.dumps(
                        [{"role": "user", "content": turn.question}], ensure_ascii=False
                    ),
                    output=json.dumps(
                        {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": name, "arguments": json.dumps(arguments)},
                                }
                            ],
                        }
                    ),
                )
            )
            observations.append(
                observation(
                    "tool",
                    "TOOL",
                    name,
                    0.21,
                    0.29,
                    input=_decorated(**arguments),
                    output=json.dumps(TOOL_RESULT),
                )
            )
        observations.append(
            observation(
                "retrieve",
                "RETRIEVER",
                "search",
                0.30,
                0.45,
                input=_decorated(turn.question) if turn.words_recorded else None,
                output=json.dumps(
                    [{"id": c.chunk_id, "content": c.text, "score": c.score} for c in turn.chunks],
                    ensure_ascii=False,
                ),
            )
        )
        observations.append(
            observation(
                "generation",
                "GENERATION",
                "OpenAI-generation",
                0.46,
                0.98,
                model=MODEL,
                input=json.dumps(turn.messages, ensure_ascii=False),
                output=json.dumps({"role": "assistant", "content": turn.answer}, ensure_ascii=False)
                if turn.answer is not None
                else None,
                level="DEFAULT" if turn.answer is not None else "ERROR",
            )
        )
        if turn.feedback is not None:
            # Thumbs are a BOOLEAN score (1 up, 0 down); a neutral vote needs a NUMERIC one.
            boolean = turn.feedback != 0
            scores.append(
                {
                    "id": f"sc-{turn.name}",
                    "trace_id": turn.trace_id,
                    "observation_id": None,
                    "name": "user_feedback",
                    "value": float(turn.feedback == 1) if boolean else 0.0,
                    "data_type": "BOOLEAN" if boolean else "NUMERIC",
                    "timestamp": _stamp(turn.at(1) + 30 * 10**9),
                    "source": "API",
                }
            )
    return observations, scores


def write_langfuse_export(folder: Path, turns: tuple[Turn, ...] = TURNS) -> None:
    observations, scores = langfuse_rows(turns)
    for table, rows in (("observations_v2", observations), ("scores", scores)):
        (folder / table).mkdir(parents=True, exist_ok=True)
        pq.write_table(
            pa.Table.from_pylist(rows), folder / table / f"{DAY:%Y-%m-%d}T00-00-00.parquet"
        )
