"""The system under test: the built-in reference RAG, or the team's own service over HTTP.

HTTP contract (README § System under test): POST {"question", "language", "item_id"} to the
target URL; the reply is {"answer": str, "contexts": [{"chunk_id", "text", "score"}], "tool_calls":
[{"name", "arguments"}]} with contexts in rank order. A failed call is recorded with its reason;
the item's metrics become `failed`, never 0.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from pipelines.agent_tools import TOOLS
from pipelines.evaluation.params import EvalParams
from pipelines.evaluation.prompts import Context, RagAnswerPrompt, RagInput
from pipelines.models.llm import LLM, build_llm
from pipelines.records import GoldenItem, ToolCall
from pipelines.settings import Settings


@dataclass
class TargetResponse:
    answer: str | None
    contexts: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    error: str | None = None
    latency_s: float = 0.0

    @property
    def retrieved_ids(self) -> list[str]:
        return [c["chunk_id"] for c in self.contexts]

    @property
    def context_texts(self) -> list[str]:
        return [c["text"] for c in self.contexts]


class Target(Protocol):
    name: str

    async def respond(self, item: GoldenItem) -> TargetResponse: ...

    async def answer_with(self, question: str, language: str, contexts: Sequence[str]) -> str | None:
        """Regenerate an answer from given contexts (noise sensitivity); None when not supported."""


class ReferenceRAG:
    """Qdrant hybrid retrieval top-k, then generation through the LLM layer with a configurable prompt."""

    def __init__(self, index, llm: LLM, *, k: int = 5, mode: str = "hybrid", prompt: str | None = None,
                 name: str = "reference-rag"):  # fmt: skip
        self.index, self.llm, self.k, self.mode, self.name = index, llm, k, mode, name
        self.prompt = RagAnswerPrompt(prompt)
        self._hits: dict[str, list] = {}

    def retrieve_all(self, items: Sequence[GoldenItem]) -> None:
        """Search before generating: local-mode Qdrant is not for concurrent threads, and searches are quick."""
        for item in items:
            if item.qtype != "tool" and item.item_id not in self._hits:
                self._hits[item.item_id] = self.index.search(item.question, k=self.k, mode=self.mode)

    async def respond(self, item: GoldenItem) -> TargetResponse:
        started = time.perf_counter()
        if item.qtype == "tool":
            messages = [{"role": "user", "content": item.question}]
            result = await self.llm.chat_with_tools(messages, TOOLS)
            if not result.ok and not result.value:
                return TargetResponse(answer=None, error=f"tool call failed: {result.error}")
            return TargetResponse(answer="", tool_calls=list(result.value or []), latency_s=time.perf_counter() - started)
        hits = self._hits.get(item.item_id) or self.index.search(item.question, k=self.k, mode=self.mode)
        contexts = [{"chunk_id": h.chunk_id, "text": h.text, "score": h.score} for h in hits]
        answer = await self._generate(item.question, item.language, [c["text"] for c in contexts], [c["chunk_id"] for c in contexts])
        if answer.error:
            return TargetResponse(answer=None, contexts=contexts, error=f"generation failed: {answer.error}")
        return TargetResponse(answer=answer.value.answer, contexts=contexts, latency_s=time.perf_counter() - started)

    async def answer_with(self, question: str, language: str, contexts: Sequence[str]) -> str | None:
        result = await self._generate(question, language, list(contexts), [f"ctx-{i}" for i in range(len(contexts))])
        return result.value.answer if result.ok else None

    async def _generate(self, question: str, language: str, texts: list[str], ids: list[str]):
        inputs = RagInput(question=question, language=language,
                          contexts=[Context(chunk_id=i, text=t) for i, t in zip(ids, texts)])  # fmt: skip
        return await self.llm.run(self.prompt, inputs)


class HTTPTarget:
    """The team's own RAG service, called once per item with bounded concurrency."""

    def __init__(self, url: str, *, timeout_s: float = 60.0, max_concurrency: int = 8, headers: dict | None = None,
                 name: str | None = None):  # fmt: skip
        self.url, self.timeout_s, self.headers = url, timeout_s, headers or {}
        self.name = name or url
        self._limit = max_concurrency

    async def respond(self, item: GoldenItem) -> TargetResponse:
        return await self._post({"question": item.question, "language": item.language, "item_id": item.item_id})

    async def answer_with(self, question: str, language: str, contexts: Sequence[str]) -> str | None:
        reply = await self._post({"question": question, "language": language, "contexts": list(contexts)})
        return reply.answer if reply.error is None else None

    async def _post(self, body: dict) -> TargetResponse:
        started = time.perf_counter()
        semaphore = _semaphore(self.url, self._limit)
        try:
            async with semaphore, httpx.AsyncClient(timeout=self.timeout_s, headers=self.headers) as client:
                response = await client.post(self.url, json=body)
        except httpx.HTTPError as exc:
            return TargetResponse(answer=None, error=f"target unreachable: {type(exc).__name__}: {exc}")
        if response.status_code != 200:
            return TargetResponse(answer=None, error=f"target answered HTTP {response.status_code}: {response.text[:200]}")
        try:
            data = response.json()
            return TargetResponse(
                answer=str(data["answer"]),
                contexts=[{"chunk_id": str(c["chunk_id"]), "text": str(c["text"]), "score": c.get("score")} for c in data.get("contexts", [])],
                tool_calls=[ToolCall(name=t["name"], arguments=t.get("arguments") or {}) for t in data.get("tool_calls", [])],
                latency_s=time.perf_counter() - started,
            )  # fmt: skip
        except (ValueError, KeyError, TypeError) as exc:
            return TargetResponse(answer=None, error=f"target reply breaks the contract (see README): {exc!r}")


_SEMAPHORES: dict[tuple, asyncio.Semaphore] = {}


def _semaphore(url: str, limit: int) -> asyncio.Semaphore:
    key = (url, id(asyncio.get_running_loop()))
    if key not in _SEMAPHORES:
        _SEMAPHORES[key] = asyncio.Semaphore(limit)
    return _SEMAPHORES[key]


def build_target(settings: Settings, params: EvalParams, index) -> ReferenceRAG | HTTPTarget:
    """The system under test a run's parameters name: the team's service, or the reference RAG on `index`."""
    if params.target_url:
        return HTTPTarget(params.target_url, name=params.target_name)
    return ReferenceRAG(index, build_llm(settings, "generator"), k=params.retrieval_k, mode=params.retrieval_mode,
                        prompt=params.prompt, name=params.target_name)  # fmt: skip


async def respond_all(target: Target, items: Sequence[GoldenItem]) -> list[TargetResponse]:
    return list(await asyncio.gather(*(target.respond(item) for item in items)))
