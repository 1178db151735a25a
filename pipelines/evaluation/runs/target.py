"""The system under test: the built-in reference RAG, or the team's own service over HTTP.

HTTP contract (docs/how-to/real-services.md, "Your own RAG service as the system under test"): POST
{"question", "language", "item_id"} to the target URL; the reply is {"answer": str, "contexts":
[{"chunk_id", "text", "score"}], "tool_calls": [{"name", "arguments"}]} with contexts in rank order.
A failed call is recorded with its reason; the item's metrics become `failed`, never 0.

Both targets answer again from given contexts (`answer_with`, noise sensitivity) through the same
path as their first answer: the reference RAG sends its generator the same prompt with the contexts
numbered by position either way, so a clean regeneration is the very same request; the HTTP target
gets the contract's contexts request.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from pipelines.core.agent_tools import TOOLS
from pipelines.evaluation.runs.params import EvalParams
from pipelines.evaluation.runs.rag_prompt import Context, RagAnswerPrompt, RagInput
from pipelines.models.budget import BudgetSpent, is_refusal
from pipelines.models.backends import build_llm
from pipelines.models.llm import LLM
from pipelines.models.offline import OFFLINE_MODEL, offline_model_label
from pipelines.models.usage import scope
from pipelines.core.records import GoldenItem, ToolCall
from pipelines.core.redact import redact_text
from pipelines.core.settings import Settings


@dataclass
class TargetResponse:
    answer: str | None
    contexts: list[dict[str, Any]] = field(default_factory=list)
    """What the answer was generated from, in rank order."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    error: str | None = None
    latency_s: float = 0.0
    ranking: list[str] | None = None
    """Chunk ids retrieved in rank order, deeper than `contexts` when the target retrieved more than
    it generated from (the reference RAG retrieves to the largest k of the run); None: the contexts'
    ids."""

    @property
    def retrieved_ids(self) -> list[str]:
        """The ranking retrieval metrics are computed on."""
        return (
            list(self.ranking)
            if self.ranking is not None
            else [c["chunk_id"] for c in self.contexts]
        )

    @property
    def context_texts(self) -> list[str]:
        return [c["text"] for c in self.contexts]


class Target(Protocol):
    name: str

    async def respond(self, item: GoldenItem) -> TargetResponse: ...

    async def answer_with(
        self, question: str, language: str, contexts: Sequence[str], *, sample: int = 0
    ) -> str | None:
        """Answer again from given contexts (noise sensitivity); None when not supported. `sample` >
        0 asks for an independent draw of the same request (the no-noise control)."""


class ReferenceRAG:
    """Qdrant hybrid retrieval, then generation from the top `k` through the LLM layer with a
    configurable prompt.

    Retrieves to `depth` (at least k) so that recall@k and precision@k are measured on a full list
    up to the largest k a run asks for; the generator sees only the top k.
    """

    def __init__(
        self,
        index,
        llm: LLM,
        *,
        k: int = 5,
        mode: str = "hybrid",
        prompt: str | None = None,
        name: str = "reference-rag",
        depth: int | None = None,
    ):
        self.index, self.llm, self.k, self.mode, self.name = index, llm, k, mode, name
        self.depth = max(k, depth or k)
        self.prompt = RagAnswerPrompt(prompt)
        self._hits: dict[str, list] = {}

    def retrieve_all(self, items: Sequence[GoldenItem]) -> None:
        """Search before generating: local-mode Qdrant is not for concurrent threads, and searches
        are quick."""
        for item in items:
            if item.qtype != "tool" and item.item_id not in self._hits:
                self._hits[item.item_id] = self.index.search(
                    item.question, k=self.depth, mode=self.mode
                )

    async def respond(self, item: GoldenItem) -> TargetResponse:
        started = time.perf_counter()
        if item.qtype == "tool":
            messages = [{"role": "user", "content": item.question}]
            result = await self.llm.chat_with_tools(messages, TOOLS)
            if not result.ok and not result.value:
                return TargetResponse(answer=None, error=f"tool call failed: {result.error}")
            return TargetResponse(
                answer="",
                tool_calls=list(result.value or []),
                latency_s=time.perf_counter() - started,
            )
        hits = self._hits.get(item.item_id) or self.index.search(
            item.question, k=self.depth, mode=self.mode
        )
        ranking = [h.chunk_id for h in hits]
        contexts = [
            {"chunk_id": h.chunk_id, "text": h.text, "score": h.score} for h in hits[: self.k]
        ]
        answer = await self._generate(item.question, item.language, [c["text"] for c in contexts])
        if answer.error:
            return TargetResponse(
                answer=None,
                contexts=contexts,
                error=f"generation failed: {answer.error}",
                ranking=ranking,
            )
        return TargetResponse(
            answer=answer.value.answer,
            contexts=contexts,
            latency_s=time.perf_counter() - started,
            ranking=ranking,
        )

    async def answer_with(
        self, question: str, language: str, contexts: Sequence[str], *, sample: int = 0
    ) -> str | None:
        result = await self._generate(question, language, list(contexts), sample=sample)
        if is_refusal(result.error):
            # not "cannot answer": the arm's scores are skipped for the budget, not failed
            raise BudgetSpent()
        return result.value.answer if result.ok else None

    async def _generate(self, question: str, language: str, texts: list[str], *, sample: int = 0):
        # Numbered by position, never by chunk id: a regeneration from the same texts is the same
        # request.
        inputs = RagInput(
            question=question,
            language=language,
            sample=sample,
            contexts=[Context(chunk_id=str(rank), text=t) for rank, t in enumerate(texts, start=1)],
        )
        with scope(metric="answer"):
            return await self.llm.run(self.prompt, inputs)


class HTTPTarget:
    """The team's own RAG service, called once per item with bounded concurrency."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 60.0,
        max_concurrency: int = 8,
        headers: dict | None = None,
        name: str | None = None,
    ):
        self.url, self.timeout_s, self.headers = url, timeout_s, headers or {}
        self.name = name or url
        self._limit = max_concurrency

    async def respond(self, item: GoldenItem) -> TargetResponse:
        return await self._post(
            {"question": item.question, "language": item.language, "item_id": item.item_id}
        )

    async def answer_with(
        self, question: str, language: str, contexts: Sequence[str], *, sample: int = 0
    ) -> str | None:
        # Every call to the service is an independent draw already: `sample` needs no marker.
        reply = await self._post(
            {"question": question, "language": language, "contexts": list(contexts)}
        )
        return reply.answer if reply.error is None else None

    async def _post(self, body: dict) -> TargetResponse:
        started = time.perf_counter()
        semaphore = _semaphore(self.url, self._limit)
        try:
            async with (
                semaphore,
                httpx.AsyncClient(timeout=self.timeout_s, headers=self.headers) as client,
            ):
                response = await client.post(self.url, json=body)
        except httpx.HTTPError as exc:
            return TargetResponse(
                answer=None, error=redact_text(f"target unreachable: {type(exc).__name__}: {exc}")
            )
        if response.status_code != 200:
            return TargetResponse(
                answer=None,
                error=f"target answered HTTP {response.status_code}: {response.text[:200]}",
            )
        try:
            data = response.json()
            return TargetResponse(
                answer=str(data["answer"]),
                contexts=[
                    {
                        "chunk_id": str(c["chunk_id"]),
                        "text": str(c["text"]),
                        "score": c.get("score"),
                    }
                    for c in data.get("contexts", [])
                ],
                tool_calls=[
                    ToolCall(name=t["name"], arguments=t.get("arguments") or {})
                    for t in data.get("tool_calls", [])
                ],
                latency_s=time.perf_counter() - started,
            )
        except (ValueError, KeyError, TypeError) as exc:
            return TargetResponse(
                answer=None,
                error=f"target reply breaks the contract (docs/how-to/real-services.md): {exc!r}",
            )


_SEMAPHORES: dict[tuple, asyncio.Semaphore] = {}


def _semaphore(url: str, limit: int) -> asyncio.Semaphore:
    key = (url, id(asyncio.get_running_loop()))
    if key not in _SEMAPHORES:
        _SEMAPHORES[key] = asyncio.Semaphore(limit)
    return _SEMAPHORES[key]


def build_target(settings: Settings, params: EvalParams, index) -> ReferenceRAG | HTTPTarget:
    """The system under test a run's parameters name: the team's service, or the reference RAG on
    `index`."""
    if params.target_url:
        # Credentials travel as headers from the settings (or the ragwatch_target connection), never
        # in the URL.
        headers = {
            name: value.get_secret_value() for name, value in settings.target_headers.items()
        }
        return HTTPTarget(params.target_url, name=params.target_name, headers=headers)
    return ReferenceRAG(
        index,
        build_llm(settings, "generator"),
        k=params.retrieval_k,
        mode=params.retrieval_mode,
        prompt=params.prompt,
        name=params.target_name,
        depth=max(params.k),
    )


def generator_label(llm: LLM | None) -> str | None:
    """The generator's name for run records: the offline backend's with its fault rates."""
    if llm is None:
        return None
    return offline_model_label() if llm.model == OFFLINE_MODEL else llm.model


async def respond_all(target: Target, items: Sequence[GoldenItem]) -> list[TargetResponse]:
    return list(await asyncio.gather(*(target.respond(item) for item in items)))
