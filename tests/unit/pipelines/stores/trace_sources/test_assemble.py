"""One trace's spans into a row: the question that is not a prompt, the tool that ran, the span an
evaluation judges, and an empty retrieval in every span vocabulary."""

from __future__ import annotations

import json

import pytest

from pipelines.core.user_question import QuestionRule
from pipelines.stores.trace_sources.assemble import SOURCE_REJECTION, assemble_trace
from pipelines.stores.trace_sources.spans import Span

TRACE = "c" * 32
QUESTION = "Which port does the REST API use?"
CHUNK = "Qdrant listens on port 6333 for the REST API. The gRPC interface uses port 6334."
PROMPT = f"Use the context to answer.\n\nContext:\n[1] {CHUNK}\n\nQuestion: {QUESTION}\nAnswer:"


def span(span_id: str, parent: str, name: str, start: int, **attributes) -> Span:
    return Span(
        TRACE,
        span_id * 16,
        parent * 16 if parent else "",
        name,
        start,
        start + 1_000_000,
        attributes,
    )


def genai_trace(
    *, query: str | None = None, root_input: str | None = None, documents="auto"
) -> list[Span]:
    """A RAG turn as OpenTelemetry's GenAI instrumentation records it: the app's root, a retrieval
    span (ids and scores only) and a chat span whose user message is the filled template."""
    retrieval = {"gen_ai.operation.name": "retrieval"}
    if query:
        retrieval["gen_ai.retrieval.query.text"] = query
    if documents == "auto":
        documents = json.dumps([{"id": "ops-ports#1", "score": 0.8}])
    if documents is not None:
        retrieval["gen_ai.retrieval.documents"] = documents
    root = {"input.value": root_input} if root_input else {}
    messages = [{"role": "user", "parts": [{"type": "text", "content": PROMPT}]}]
    reply = [{"role": "assistant", "parts": [{"type": "text", "content": "Port 6333."}]}]
    return [
        span("1", "", "rag.request", 1_000, **root),
        span("2", "1", "retrieval docs", 2_000, **retrieval),
        span(
            "3",
            "1",
            "chat gen-model",
            3_000,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(messages),
                "gen_ai.output.messages": json.dumps(reply),
                "gen_ai.response.id": "chatcmpl-42",
            },
        ),
    ]


def test_the_prompt_is_never_the_question():
    row = assemble_trace(genai_trace(), source="otlp")
    reason, field, detail = row[SOURCE_REJECTION]
    assert (reason, field, row["question"]) == ("question_is_prompt", "question", None)
    assert "the last user message" in detail and "gen_ai.retrieval.query.text" in detail


@pytest.mark.parametrize(
    "where",
    [{"query": QUESTION}, {"root_input": QUESTION}],
    ids=["retrieval query", "root input"],
)
def test_the_question_comes_from_the_retrieval_query_or_the_roots_input(where):
    row = assemble_trace(genai_trace(**where), source="otlp")
    assert (
        SOURCE_REJECTION not in row
        and row["question"] == QUESTION
        and row["answer"] == "Port 6333."
    )


def test_a_teams_attribute_or_pattern_gives_the_question():
    spans = genai_trace()
    spans[0].attributes["app.user_question"] = QUESTION
    assert assemble_trace(
        spans, source="otlp", question_rule=QuestionRule.of("app.user_question", None)
    )["question"] == (QUESTION)
    rule = QuestionRule.of(None, r"Question:\s*(?P<question>.+?)\s*Answer:")
    assert assemble_trace(genai_trace(), source="otlp", question_rule=rule)["question"] == QUESTION


def test_a_prompt_holding_a_retrieved_documents_text_is_refused_without_a_template_marker():
    """OpenInference records each document's text: a prompt that pastes it in is known by it."""
    root = span("1", "", "rag", 1_000, **{"openinference.span.kind": "CHAIN"})
    retriever = span(
        "2",
        "1",
        "retrieve",
        2_000,
        **{
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.id": "ops-ports#1",
            "retrieval.documents.0.document.content": CHUNK,
        },
    )
    llm = span(
        "3",
        "1",
        "ChatCompletion",
        3_000,
        **{
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": f"{CHUNK}\n\n{QUESTION}",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "Port 6333.",
        },
    )
    assert (
        assemble_trace([root, retriever, llm], source="openinference")[SOURCE_REJECTION][0]
        == "question_is_prompt"
    )


@pytest.mark.parametrize("documents", [None, "[]"], ids=["attribute absent", "empty list"])
def test_an_empty_genai_retrieval_is_a_trace_with_no_contexts(documents):
    row = assemble_trace(genai_trace(query=QUESTION, documents=documents), source="otlp")
    assert SOURCE_REJECTION not in row and row["contexts"] == []


def test_an_empty_openinference_retrieval_is_a_trace_with_no_contexts():
    root = span(
        "1", "", "rag", 1_000, **{"openinference.span.kind": "CHAIN", "input.value": QUESTION}
    )
    root.attributes["output.value"] = "I do not know."
    retriever = span(
        "2",
        "1",
        "retrieve",
        2_000,
        **{"openinference.span.kind": "RETRIEVER", "input.value": QUESTION},
    )
    row = assemble_trace([root, retriever], source="openinference")
    assert (
        SOURCE_REJECTION not in row and row["contexts"] == [] and row["answer"] == "I do not know."
    )


def test_openllmetry_tool_spans_give_the_tools_name_and_keyword_arguments():
    """OpenLLMetry's @tool decorator: `traceloop.entity.name`, and the call as {"args": [...],
    "kwargs": {...}}."""
    spans = genai_trace(query="Which version of json do I have?")
    spans.append(
        span(
            "4",
            "1",
            "lookup_version.tool",
            2_500,
            **{
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "lookup_version",
                "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"module": "json"}}),
                "traceloop.entity.output": json.dumps("2.0.9"),
            },
        )
    )
    spans.append(
        span(
            "5",
            "1",
            "fetch.tool",
            2_600,
            **{
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "fetch",
                "traceloop.entity.input": json.dumps(
                    {"args": ["https://example.org"], "kwargs": {"timeout": 3}}
                ),
            },
        )
    )
    spans.append(
        span(
            "6", "1", "execute_tool restart_pod", 2_700, **{"gen_ai.operation.name": "execute_tool"}
        )
    )
    row = assemble_trace(spans, source="otlp")
    assert [(c["name"], c["arguments"]) for c in row["tool_calls"]] == [
        ("lookup_version", {"module": "json"}),
        ("fetch", {"timeout": 3, "args": ["https://example.org"]}),
        ("restart_pod", {}),
    ]
    spans[-3].attributes["traceloop.entity.input"] = json.dumps(["not", "the", "decorator's"])
    assert assemble_trace(spans, source="otlp")[SOURCE_REJECTION][0] == "unknown_attribute_shape"


def test_the_metadata_names_the_model_span_that_wrote_the_answer_and_its_response():
    row = assemble_trace(genai_trace(query=QUESTION), source="otlp")
    assert row["metadata"]["span_id"] == "1" * 16  # the root
    assert row["metadata"]["evaluated_span_id"] == "3" * 16
    assert row["metadata"]["response_id"] == "chatcmpl-42"


def without_answer(spans: list[Span]) -> list[Span]:
    del spans[-1].attributes["gen_ai.output.messages"]  # the model call failed: nothing came back
    return spans


@pytest.mark.parametrize(
    "spans, expected",
    [
        (genai_trace()[:1], ("missing_field", "question")),
        (without_answer(genai_trace(query=QUESTION)), ("missing_field", "answer")),
        (
            without_answer(genai_trace()),
            ("missing_field", "answer"),
        ),  # a prompt for question, and no answer
        (genai_trace(), ("question_is_prompt", "question")),
    ],
    ids=["no question", "no answer", "prompt and no answer", "prompt"],
)
def test_a_trace_is_quarantined_under_the_sql_stores_reason_in_its_order(spans, expected):
    """A SQL row without a question or an answer is `missing_field`, checked before the question is
    refused as a prompt: a span tree missing the same is quarantined the same."""
    assert assemble_trace(spans, source="otlp")[SOURCE_REJECTION][:2] == expected


def test_an_unrecorded_language_is_the_questions_and_a_recorded_one_wins():
    """Span exports seldom carry a language: the day is stratified by the question's, never filed
    under another."""
    row = assemble_trace(genai_trace(query="¿En qué puerto escucha la API REST?"), source="otlp")
    assert row["language"] == "es"
    assert (
        assemble_trace(genai_trace(query="Auf welchem Port lauscht die REST-API?"), source="otlp")[
            "language"
        ]
        == "de"
    )
    spans = genai_trace(query="¿En qué puerto escucha la API REST?")
    spans[0].attributes["ragwatch.language"] = "ca"
    assert assemble_trace(spans, source="otlp")["language"] == "ca"


def test_an_openinference_tool_decorators_call_gives_its_arguments_not_its_schema():
    """OpenInference's `@tracer.tool` records the tool's JSON schema as `tool.parameters` and the
    call's arguments as `input.value`: the spans come from the real decorator, through the SDK and
    the OTLP/JSON encoding."""
    from openinference.instrumentation import OITracer, TraceConfig
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from pipelines.stores.trace_sources.otlp_file_exporter import otlp_json
    from pipelines.stores.trace_sources.spans import request_spans

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = OITracer(provider.get_tracer("test"), TraceConfig())

    @tracer.tool
    def vector_search(query: str, top_k: int = 5) -> list[str]:
        """Search the documentation."""
        return ["ops-ports#1"]

    @tracer.chain
    def answer(question: str) -> str:
        vector_search(query="REST port", top_k=3)
        return "Port 6333."

    answer(QUESTION)
    spans = list(request_spans(json.dumps(otlp_json(exporter.get_finished_spans()))))
    tool = next(s for s in spans if s.attributes.get("openinference.span.kind") == "TOOL")
    assert (
        json.loads(tool.attributes["tool.parameters"])["type"] == "object"
    )  # the schema, as the decorator writes it
    row = assemble_trace(spans, source="openinference")
    assert row["tool_calls"] == [
        {"name": "vector_search", "arguments": {"query": "REST port", "top_k": 3}}
    ]
    del tool.attributes["input.value"]  # a schema alone says nothing of the call
    assert assemble_trace(spans, source="openinference")["tool_calls"] == [
        {"name": "vector_search", "arguments": {}}
    ]
