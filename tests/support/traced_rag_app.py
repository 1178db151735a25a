"""A tiny RAG assistant, instrumented the ways teams instrument theirs, whose spans are exported to
OTLP/JSON files.

The model is the project's simulator over HTTP (the OpenAI client, as against vLLM), the retriever a
Qdrant local collection (hashed bag-of-words vectors: no model to download). Three instrumentations,
one per span vocabulary:
- `genai`: the OpenTelemetry API by hand, with the current GenAI semantic conventions (retrieval,
  chat, execute_tool);
- `openllmetry`: OpenLLMetry's OpenAI instrumentation (the older indexed gen_ai.prompt.{i} /
  gen_ai.completion.{i}) under a hand-made GenAI retrieval span;
- `openinference`: OpenInference's OpenAI instrumentation, with RETRIEVER, TOOL and CHAIN spans
  built with its semantic conventions, as Phoenix users write them. Spans go through the SDK's
  BatchSpanProcessor into `OtlpJsonFileExporter`, unless the app is handed a tracer provider its
  setup made (Phoenix's `register`, which also instruments the OpenAI client).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from qdrant_client import QdrantClient, models

from pipelines.core.agent_tools import TOOLS
from pipelines.evaluation.runs.rag_prompt import Context, RagAnswerPrompt, RagInput
from pipelines.stores.trace_sources.otlp_file_exporter import OtlpJsonFileExporter

DIMENSIONS = 64
CHUNKS = {
    "ops-ports#1": "Qdrant listens on port 6333 for the REST API. The gRPC interface uses port 6334.",
    "ops-snapshots#1": "Snapshots are written to the snapshots folder. A snapshot can be restored with the recover API.",
    "ops-backups#2": "Backups run every night at 02:00 UTC and are kept for 14 days.",
    "es-puertos#1": "El servidor escucha en el puerto 8080. La consola de administración usa el puerto 9090.",
    "es-copias#1": "Las copias de seguridad se hacen cada noche y se guardan durante catorce días.",
}


def embed(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    return vector


@dataclass
class Turn:
    question: str
    language: str | None = None
    """Recorded on the root span when given; otherwise the source detects it."""
    feedback: int | None = None
    agent: bool = False
    """Ask the model for a tool call first (function calling), then answer."""
    fault: str | None = None
    """What goes wrong in the app: "cache_hit" (an answer from a cache, only the root span, no
    question recorded), "no_documents" (the retrieval span never gets its documents),
    "documents_as_text" (they are written as a comma list, not the convention's JSON)."""


class TracedRagApp:
    def __init__(
        self,
        simulator_url: str,
        qdrant_path: Path,
        export_path: Path | None,
        *,
        style: str,
        app: str = "docs-bot",
        tracer_provider: TracerProvider | None = None,
    ):
        self.style = style
        self.client = openai.OpenAI(base_url=simulator_url, api_key="not-needed", max_retries=0)
        self.qdrant = QdrantClient(path=str(qdrant_path))
        if not self.qdrant.collection_exists("docs"):
            self.qdrant.create_collection(
                "docs",
                vectors_config=models.VectorParams(
                    size=DIMENSIONS, distance=models.Distance.COSINE
                ),
            )
            self.qdrant.upsert(
                "docs",
                [
                    models.PointStruct(
                        id=i, vector=embed(text), payload={"chunk_id": cid, "text": text}
                    )
                    for i, (cid, text) in enumerate(CHUNKS.items())
                ],
            )
        self.instrumentor: Any = None
        if tracer_provider is not None:  # set up and instrumented by the caller
            self.provider = tracer_provider
            self.tracer = self.provider.get_tracer("tests.support.traced_rag_app")
            return
        self.provider = TracerProvider(resource=Resource.create({"service.name": app}))
        self.provider.add_span_processor(
            BatchSpanProcessor(OtlpJsonFileExporter(export_path), max_export_batch_size=7)
        )
        self.tracer = self.provider.get_tracer("tests.support.traced_rag_app")
        if style == "openllmetry":
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor

            self.instrumentor = OpenAIInstrumentor()
        elif style == "openinference":
            from openinference.instrumentation.openai import OpenAIInstrumentor

            self.instrumentor = OpenAIInstrumentor()
        if self.instrumentor is not None:
            self.instrumentor.instrument(tracer_provider=self.provider)

    def close(self) -> None:
        if self.instrumentor is not None:
            self.instrumentor.uninstrument()
        self.provider.shutdown()  # flushes the batch processor into the file
        self.qdrant.close()

    def ask(self, turn: Turn) -> tuple[str, str]:
        """(trace id, answer) of one turn."""
        root_attributes: dict[str, Any] = {}
        if turn.language:
            root_attributes["ragwatch.language"] = turn.language
        if turn.feedback is not None:
            root_attributes["ragwatch.user_feedback"] = turn.feedback
        if self.style == "openinference":
            root_attributes.update(
                {"openinference.span.kind": "CHAIN", "input.value": turn.question}
            )
        with self.tracer.start_as_current_span("rag.request", attributes=root_attributes) as root:
            if turn.fault == "cache_hit":
                return format(root.get_span_context().trace_id, "032x"), ""
            if turn.agent:
                self._tool_turn(turn.question)
            hits = self._retrieve(turn.question, turn.fault)
            answer = self._answer(turn.question, turn.language or "en", hits)
            if self.style == "openinference":
                root.set_attribute("output.value", answer)
            return format(root.get_span_context().trace_id, "032x"), answer

    def _retrieve(self, question: str, fault: str | None = None) -> list[models.ScoredPoint]:
        if self.style == "openinference":
            with self.tracer.start_as_current_span(
                "retrieve",
                attributes={"openinference.span.kind": "RETRIEVER", "input.value": question},
            ) as span:
                hits = self.qdrant.query_points("docs", query=embed(question), limit=3).points
                for i, hit in enumerate(hits):
                    span.set_attribute(
                        f"retrieval.documents.{i}.document.id", hit.payload["chunk_id"]
                    )
                    span.set_attribute(
                        f"retrieval.documents.{i}.document.content", hit.payload["text"]
                    )
                    span.set_attribute(f"retrieval.documents.{i}.document.score", hit.score)
                return hits
        with self.tracer.start_as_current_span(
            "retrieval docs",
            attributes={
                "gen_ai.operation.name": "retrieval",
                "gen_ai.data_source.id": "docs",
                "gen_ai.retrieval.query.text": question,
            },
        ) as span:
            hits = self.qdrant.query_points("docs", query=embed(question), limit=3).points
            if fault == "documents_as_text":
                span.set_attribute(
                    "gen_ai.retrieval.documents", ",".join(h.payload["chunk_id"] for h in hits)
                )
            elif fault != "no_documents":
                span.set_attribute(
                    "gen_ai.retrieval.documents",
                    json.dumps([{"id": h.payload["chunk_id"], "score": h.score} for h in hits]),
                )
            return hits

    def _answer(self, question: str, language: str, hits: list[models.ScoredPoint]) -> str:
        prompt = RagAnswerPrompt()
        inputs = RagInput(
            question=question,
            language=language,
            contexts=[
                Context(chunk_id=h.payload["chunk_id"], text=h.payload["text"]) for h in hits
            ],
        )
        messages = prompt.messages(inputs)
        if self.style != "genai":  # the instrumentation library records the call
            reply = self._chat(
                messages,
                response_format={"type": "json_schema", "json_schema": prompt.json_schema()},
            )
            return json.loads(reply.choices[0].message.content)["answer"]
        with self.tracer.start_as_current_span(
            "chat gen-model",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gen-model",
                "gen_ai.input.messages": json.dumps(
                    [
                        {"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]}
                        for m in messages
                    ]
                ),
            },
        ) as span:
            reply = self._chat(
                messages,
                response_format={"type": "json_schema", "json_schema": prompt.json_schema()},
            )
            answer = json.loads(reply.choices[0].message.content)["answer"]
            span.set_attribute("gen_ai.response.model", reply.model)
            span.set_attribute(
                "gen_ai.output.messages",
                json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": answer}],
                            "finish_reason": "stop",
                        }
                    ]
                ),
            )
            return answer

    def _chat(self, messages: list[dict], **options: Any):
        return self.client.chat.completions.create(model="gen-model", messages=messages, **options)

    def _tool_turn(self, question: str) -> None:
        """The agent's first step: the model picks a tool, the app runs it (a stub that returns
        nothing)."""
        reply = self._chat([{"role": "user", "content": question}], tools=TOOLS)
        for call in reply.choices[0].message.tool_calls or []:
            name, arguments = call.function.name, call.function.arguments
            if self.style == "openinference":
                attributes = {
                    "openinference.span.kind": "TOOL",
                    "tool.name": name,
                    "tool.parameters": arguments,
                }
            else:
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": call.id,
                    "gen_ai.tool.call.arguments": arguments,
                }
            with self.tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
                pass
