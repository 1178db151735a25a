"""An OpenAI-compatible server answered by the offline backend, with the faults of a real one.

The real client (`OpenAICompatibleLLM`) is tested and benchmarked over HTTP against it. A chat
completion with a `json_schema` response format is dispatched on the schema's `name` to the prompt
of that name in the `PromptRegistry` the simulator was created with (the CLI passes
`pipelines.cli.prompt_catalog.all_prompts()`, every prompt ragwatch sends), its inputs are recovered
from the user messages, and the prompt's `offline` output is the reply. A request with `tools` is
answered by the offline backend's tool choice. A plain prompt from ragas' legacy metrics (the ones
`ragas.evaluate()` runs), which asks for JSON in the text, is answered by the prompt of the output
model it names (`LEGACY_RAGAS_OUTPUTS`). Any other chat (an app's own RAG template in free text, as
the trace-source docs' snippets send) is answered extractively: the sentence of the last user
message that covers its last line (the question) best. Each kind gets one choice per requested `n`,
choice k being the prompt's offline sample k (as vLLM samples n completions of one prompt); a
request that samples (temperature > 0) with OpenAI's `seed` s gets samples s + k instead, so a
distinct seed draws other samples, as vLLM's seeded sampling does, and the same seed the same ones.
Knobs add latency, a capacity beyond which requests queue, and injected faults (500, 429, malformed
JSON, hangs) decided by a seeded draw per request.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import random
import re
import socket
import struct
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError, model_validator

from pipelines.core.text import coverage, sentences
from pipelines.models.offline import choose_tool
from pipelines.models.prompts import PromptRegistry, UnknownPrompt, is_repair_request, sample_index

DEFAULT_MODEL = "ragwatch-simulator"
HANG_S = 3600.0
"""A hung request lasts this long unless the client goes away first (far beyond any client
timeout)."""
FALLBACK_DIMENSIONS = 384
CHARS_PER_TOKEN = 4
PREFIX_BLOCK_TOKENS = 16
"""vLLM's KV-cache block size: its automatic prefix cache reuses whole blocks of a prompt's
prefix."""
PREFIX_CACHE_BLOCKS = 100_000
"""Blocks the simulated prefix cache holds (1.6 M tokens), least recently used dropped first."""
LEGACY_SCHEMA_MARK = "as specified in JSON Schema:"
"""Where a legacy ragas prompt (ragas.prompt.PydanticPrompt) gives its output model's JSON
schema."""
LEGACY_RAGAS_OUTPUTS = {
    "StatementGeneratorOutput": "ragas_StatementGeneratorOutput",
    "NLIStatementOutput": "ragas_NLIStatementOutput",
    "ResponseRelevanceOutput": "ragas_AnswerRelevanceOutput",
    "Verification": "ragas_ContextPrecisionOutput",
    "ContextRecallClassifications": "ragas_ContextRecallOutput",
}
"""Legacy ragas output model (the schema's title) -> the prompt of its collections twin, listed by
pipelines.models.ragas_adapter: same inputs in the prompt's last `input:` block, same reply
fields."""


class SimulatorKnobs(BaseModel):
    latency_s: float = Field(default=0.0, ge=0)
    """How long each served request takes, while it holds one unit of capacity."""
    capacity: int = Field(default=64, ge=1)
    """Requests served at once; the rest queue (stats report the queue)."""
    error_rate: float = Field(default=0.0, ge=0, le=1)
    rate_limit_rate: float = Field(default=0.0, ge=0, le=1)
    malformed_rate: float = Field(default=0.0, ge=0, le=1)
    timeout_rate: float = Field(default=0.0, ge=0, le=1)
    seed: int = 0
    """Fault draws are a function of (seed, request number): a rerun injects the same faults."""
    fail_first_n: int = Field(default=0, ge=0)
    """The first N requests after these knobs are set fail with HTTP 500."""
    malformed_repairs: bool = False
    """Whether repair requests may be malformed too; by default they are answered correctly."""
    ignore_n: bool = False
    """Answer a structured prompt with one choice whatever `n` asks for, as llama.cpp's server
    does."""

    @model_validator(mode="after")
    def _rates_fit(self) -> SimulatorKnobs:
        total = self.error_rate + self.rate_limit_rate + self.malformed_rate + self.timeout_rate
        if total > 1.0 + 1e-9:
            raise ValueError(
                f"fault rates add up to {total:g}; they are shares of requests and must be ≤ 1"
            )
        return self


class _Fault(Exception):
    def __init__(self, status: int, message: str, kind: str):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


class _State:
    """Counters and the capacity gate; lives in the server's event loop."""

    def __init__(self, knobs: SimulatorKnobs):
        self.knobs = knobs
        self.knobs_since = 0
        self.requests = 0
        self.in_flight = self.queued = 0
        self.max_in_flight = self.max_queued = 0
        self.queue_wait_s = 0.0
        self.statuses: Counter[int] = Counter()
        self.endpoints: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.models_seen: set[str] = set()
        self.models: Counter[str] = Counter()
        """Requests per model named in them: a judge and a generator sharing one server are counted
        apart."""
        self.prompt_tokens = self.completion_tokens = self.cached_prompt_tokens = 0
        self._prefix_blocks: OrderedDict[bytes, None] = OrderedDict()
        self._gate: asyncio.Condition | None = None

    def count_tokens(self, messages: list[dict], usage: dict[str, Any]) -> None:
        """Token totals of served chat completions, and the prompt tokens an automatic prefix cache
        (vLLM's) would have held: the prompt in blocks of `PREFIX_BLOCK_TOKENS`, each keyed by
        everything before it, in an LRU of `PREFIX_CACHE_BLOCKS`. A prompt's leading blocks seen
        before are cached tokens."""
        self.prompt_tokens += usage["prompt_tokens"]
        self.completion_tokens += usage["completion_tokens"]
        rendered = "".join(
            f"<|{m.get('role')}|>{json.dumps(m.get('content'), ensure_ascii=False)}"
            for m in messages
        )
        block_chars = PREFIX_BLOCK_TOKENS * CHARS_PER_TOKEN
        key, hits, missed = hashlib.blake2b(digest_size=16), 0, False
        for start in range(0, len(rendered) - block_chars + 1, block_chars):
            key.update(rendered[start : start + block_chars].encode())
            block = key.digest()
            if not missed and block in self._prefix_blocks:
                hits += 1
                self._prefix_blocks.move_to_end(block)
                continue
            missed = True
            self._prefix_blocks[block] = None
            if len(self._prefix_blocks) > PREFIX_CACHE_BLOCKS:
                self._prefix_blocks.popitem(last=False)
        self.cached_prompt_tokens += min(usage["prompt_tokens"], hits * PREFIX_BLOCK_TOKENS)

    async def set_knobs(self, knobs: SimulatorKnobs) -> None:
        self.knobs, self.knobs_since = knobs, self.requests
        if self._gate is not None:
            async with self._gate:
                self._gate.notify_all()  # a raised capacity admits the waiters now

    @asynccontextmanager
    async def capacity_slot(self):
        if self._gate is None:
            self._gate = asyncio.Condition()
        gate = self._gate
        started = time.monotonic()
        async with gate:
            self.queued += 1
            self.max_queued = max(self.max_queued, self.queued)
            try:
                await gate.wait_for(lambda: self.in_flight < self.knobs.capacity)
            finally:
                self.queued -= 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.queue_wait_s += time.monotonic() - started
        try:
            yield
        finally:
            async with gate:
                self.in_flight -= 1
                gate.notify_all()

    def draw_fault(self, number: int, can_be_malformed: bool) -> str | None:
        knobs = self.knobs
        if number - self.knobs_since < knobs.fail_first_n:
            return "fail_first_n"
        draw = random.Random(f"{knobs.seed}:{number}").random()
        for kind, rate in (
            ("error", knobs.error_rate),
            ("rate_limit", knobs.rate_limit_rate),
            ("timeout", knobs.timeout_rate),
            ("malformed", knobs.malformed_rate),
        ):
            if draw < rate:
                return kind if kind != "malformed" or can_be_malformed else None
            draw -= rate
        return None

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "served": self.statuses.get(200, 0),
            "statuses": {str(status): n for status, n in sorted(self.statuses.items())},
            "endpoints": dict(self.endpoints),
            "models": dict(self.models),
            "in_flight": self.in_flight,
            "max_concurrent": self.max_in_flight,
            "queued": self.queued,
            "max_queued": self.max_queued,
            "queue_wait_s": round(self.queue_wait_s, 3),
            "faults": dict(self.faults),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "knobs": self.knobs.model_dump(),
        }


def create_simulator(prompts: PromptRegistry, knobs: SimulatorKnobs | None = None) -> FastAPI:
    app = FastAPI(title="ragwatch model simulator", docs_url=None, redoc_url=None)
    state = _State(knobs or SimulatorKnobs())
    embed = _Embeddings()

    async def serve_with_faults(
        request: Request, body: dict, answer: Callable[[bool], Awaitable[dict]]
    ) -> JSONResponse:
        """Count, draw a fault, queue for capacity, wait the latency, then answer (or misbehave)."""
        number = state.requests
        state.requests += 1
        state.endpoints[request.url.path.removeprefix("/v1/")] += 1
        state.models_seen.add(str(body.get("model") or DEFAULT_MODEL))
        state.models[str(body.get("model") or DEFAULT_MODEL)] += 1
        try:
            fault = state.draw_fault(number, can_be_malformed=_may_be_malformed(state, body))
            if fault == "rate_limit":
                raise _Fault(429, "rate limit exceeded (injected)", fault)
            if fault in ("error", "fail_first_n"):
                raise _Fault(500, f"internal server error (injected: {fault})", fault)
            async with state.capacity_slot():
                if fault == "timeout":
                    state.faults[fault] += 1
                    await _hang(request)
                    return _error(504, "the simulated request hung", state)
                # The reply is worked out while the latency runs: a request holds its slot for
                # latency_s, as the knob says, not for latency_s plus the simulator's own CPU time
                # on a busy machine.
                answering = asyncio.ensure_future(answer(fault == "malformed"))
                try:
                    await asyncio.sleep(state.knobs.latency_s)
                    payload = await answering
                finally:
                    # no-op once it is done; stops it when the request is abandoned
                    answering.cancel()
            if fault == "malformed":
                state.faults[fault] += 1
            state.statuses[200] += 1
            return JSONResponse(payload)
        except _Fault as fault_:
            if fault_.kind:
                state.faults[fault_.kind] += 1
            return _error(fault_.status, fault_.message, state)

    @app.get("/v1/models")
    async def models() -> dict:
        names = sorted({DEFAULT_MODEL, *state.models_seen})
        return {
            "object": "list",
            "data": [{"id": n, "object": "model", "owned_by": "ragwatch"} for n in names],
        }

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> JSONResponse:
        body = await request.json()
        try:
            answer = _chat_answer(body, prompts, state.knobs.ignore_n)
        except _Fault as bad:
            state.requests += 1
            return _error(bad.status, bad.message, state)

        async def respond(malformed: bool) -> dict:
            choices = await answer()
            if malformed:
                # A reply cut short, as with finish_reason "length": the commonest broken JSON.
                choices = [
                    {**m, "content": m["content"][: max(1, len(m["content"]) // 2)]}
                    if m.get("content")
                    else m
                    for m in choices
                ]
            completion = _completion(body, choices)
            state.count_tokens(body.get("messages") or [], completion["usage"])
            return completion

        return await serve_with_faults(request, body, respond)

    @app.post("/v1/embeddings")
    async def embeddings(request: Request) -> JSONResponse:
        body = await request.json()
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            state.requests += 1
            return _error(
                400,
                "input must be a string or a list of strings (token ids are not supported)",
                state,
            )

        async def respond(_malformed: bool) -> dict:
            vectors = await asyncio.to_thread(embed, texts)
            return _embedding_list(body, texts, vectors)

        return await serve_with_faults(request, body, respond)

    @app.get("/admin/stats")
    async def admin_stats() -> dict:
        return state.stats()

    @app.post("/admin/knobs")
    async def admin_knobs(changes: dict) -> JSONResponse:
        try:
            knobs = SimulatorKnobs.model_validate({**state.knobs.model_dump(), **changes})
        except ValidationError as exc:
            return JSONResponse({"error": {"message": str(exc)}}, status_code=422)
        await state.set_knobs(knobs)
        return JSONResponse(knobs.model_dump())

    return app


def _chat_answer(
    body: dict, prompts: PromptRegistry, ignore_n: bool = False
) -> Callable[[], Awaitable[list[dict]]]:
    """What the request asks for, as a coroutine factory producing the assistant messages (one per
    choice); 400 if unanswerable."""
    messages = body.get("messages") or []
    schema = (body.get("response_format") or {}).get("json_schema") or {}
    if schema:
        try:
            prompt = prompts.get(schema.get("name", ""))
            inputs = prompt.inputs_from_messages(messages)
        except (UnknownPrompt, ValueError) as exc:
            raise _Fault(400, str(exc), kind="") from exc

        asked = max(1, int(body.get("n") or 1))
        n = 1 if ignore_n else asked
        first = sample_index(messages)  # a sample asked for on its own names itself
        if body.get("seed") is not None and float(body.get("temperature") or 0) > 0:
            first += int(body["seed"])

        async def structured() -> list[dict]:
            # n choices are n samples of the prompt (answer relevancy asks for its N questions so).
            if asked == 1 and first == 0:
                values = [await asyncio.to_thread(prompt.offline, inputs)]
            else:
                values = await asyncio.to_thread(
                    lambda: [prompt.offline_sample(inputs, first + k) for k in range(n)]
                )
            return [{"role": "assistant", "content": value.model_dump_json()} for value in values]

        return structured
    if body.get("tools"):
        tools = body["tools"]

        async def tool_calls() -> list[dict]:
            calls = await asyncio.to_thread(choose_tool, messages, tools)
            return [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": json.dumps(c.arguments, ensure_ascii=False),
                            },
                        }
                        for i, c in enumerate(calls)
                    ],
                }
            ]

        return tool_calls
    legacy = _legacy_ragas_answer(messages, int(body.get("n") or 1), prompts)
    if legacy is not None:
        return legacy
    user = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), None)
    if not isinstance(user, str) or not user.strip():
        raise _Fault(400, "the simulator answers a chat whose last user message is text", kind="")

    async def extractive() -> list[dict]:
        return [{"role": "assistant", "content": _extractive_reply(user)}] * max(
            1, int(body.get("n") or 1)
        )

    return extractive


def _extractive_reply(prompt: str) -> str:
    """The sentence above the prompt's last line that covers that line (the question) best; the
    first on a tie."""
    *context, question = [line for line in prompt.splitlines() if line.strip()] or [prompt]
    candidates = [sentence for line in context for sentence in sentences(line)]
    if not candidates:
        return "There is not enough information to answer."
    return max(candidates, key=lambda s: coverage(question, s))  # max keeps the first of equals


def _legacy_ragas_answer(
    messages: list[dict], n: int, prompts: PromptRegistry
) -> Callable[[], Awaitable[list[dict]]] | None:
    """A legacy ragas prompt asks for JSON in plain text and names its output model in the schema it
    shows; it is answered by that model's prompt, choice k as sample k (ragas asks for n choices
    where it wants n different samples, as answer relevance does). None when the prompt is not
    one."""
    prompt = next(
        (
            m["content"]
            for m in messages
            if m.get("role") == "user" and isinstance(m.get("content"), str)
        ),
        "",
    )
    mark = prompt.find(LEGACY_SCHEMA_MARK)
    if mark < 0:
        return None
    try:
        schema, _ = json.JSONDecoder().raw_decode(prompt, mark + len(LEGACY_SCHEMA_MARK) + 1)
    except json.JSONDecodeError:
        return None
    title = schema.get("title", "") if isinstance(schema, dict) else ""
    name = LEGACY_RAGAS_OUTPUTS.get(title, "")
    if name not in prompts:
        raise _Fault(
            400,
            f"no offline judgement for the legacy ragas output model {title!r}: the simulator knows "
            f"{', '.join(sorted(LEGACY_RAGAS_OUTPUTS))} when its registry holds the ragas prompts",
            kind="",
        )
    prompt = prompts.get(name)
    try:
        first = prompt.inputs_from_messages(messages)
        # A sample index gives each choice its own answer (ragas_adapter.RagasRequest has one).
        requests = [
            first.model_copy(update={"sample": k})
            if "sample" in type(first).model_fields
            else first
            for k in range(max(1, n))
        ]
    except ValueError as exc:
        raise _Fault(400, str(exc), kind="") from exc

    async def choices() -> list[dict]:
        values = await asyncio.to_thread(lambda: [prompt.offline(r) for r in requests])
        return [{"role": "assistant", "content": v.model_dump_json()} for v in values]

    return choices


def _may_be_malformed(state: _State, body: dict) -> bool:
    if not (body.get("response_format") or {}).get("json_schema"):
        return False
    return state.knobs.malformed_repairs or not is_repair_request(body.get("messages") or [])


async def _hang(request: Request) -> None:
    # Stop once the client has given up, so abandoned requests do not pile up.
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline and not await request.is_disconnected():
        await asyncio.sleep(0.05)


def _completion(body: dict, messages: list[dict]) -> dict:
    prompt_chars = sum(
        len(json.dumps(m.get("content"), ensure_ascii=False)) for m in body.get("messages") or []
    )
    completion_chars = sum(
        len(m.get("content") or json.dumps(m.get("tool_calls") or [])) for m in messages
    )
    usage = _usage(prompt_chars, completion_chars)
    return {
        "id": f"chatcmpl-sim-{hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or DEFAULT_MODEL,
        "choices": [
            {
                "index": i,
                "message": m,
                "logprobs": None,
                "finish_reason": "tool_calls" if m.get("tool_calls") else "stop",
            }
            for i, m in enumerate(messages)
        ],
        "usage": usage,
    }


def _embedding_list(body: dict, texts: list[str], vectors: list[list[float]]) -> dict:
    base64_wanted = (
        body.get("encoding_format") == "base64"
    )  # the openai client asks for base64 by default
    data = []
    for i, vector in enumerate(vectors):
        encoded = (
            base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            if base64_wanted
            else vector
        )
        data.append({"object": "embedding", "index": i, "embedding": encoded})
    tokens = _usage(sum(len(t) for t in texts), 0)["prompt_tokens"]
    return {
        "object": "list",
        "data": data,
        "model": body.get("model") or DEFAULT_MODEL,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _usage(prompt_chars: int, completion_chars: int) -> dict[str, int]:
    prompt, completion = (
        math.ceil(prompt_chars / CHARS_PER_TOKEN),
        math.ceil(completion_chars / CHARS_PER_TOKEN),
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _error(status: int, message: str, state: _State) -> JSONResponse:
    state.statuses[status] += 1
    kind = "invalid_request_error" if status == 400 else "server_error"
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": status}}, status_code=status
    )


class _Embeddings:
    """The local embedding model when it loads, else hashed bag of words: decided once, on the
    first request, so one server never mixes vectors from two spaces."""

    def __init__(self) -> None:
        self._embed: Callable[[list[str]], list[list[float]]] | None = None
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            if self._embed is None:
                try:
                    from pipelines.models.embeddings import EmbeddingError, embed_texts
                except ImportError:
                    self._embed = hashed_bag_of_words
                else:
                    try:
                        vectors = embed_texts(texts)
                    except EmbeddingError:  # the module is there but its model cannot load
                        self._embed = hashed_bag_of_words
                    else:
                        self._embed = embed_texts
                        return vectors
        return self._embed(texts)


def hashed_bag_of_words(texts: list[str]) -> list[list[float]]:
    """Deterministic unit vectors from hashed words: texts sharing words are close, and no model is
    needed."""
    vectors = []
    for text in texts:
        vector = [0.0] * FALLBACK_DIMENSIONS
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % FALLBACK_DIMENSIONS
            vector[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        vectors.append([v / norm for v in vector])
    return vectors


def serve(
    prompts: PromptRegistry,
    port: int = 8000,
    knobs: SimulatorKnobs | None = None,
    host: str = "127.0.0.1",
) -> None:
    """Run the simulator in the foreground, answering the prompts of `prompts` by name."""
    uvicorn.run(create_simulator(prompts, knobs), host=host, port=port, log_level="warning")


def served_stats(base_url: str) -> dict:
    """What a running simulator has served so far (`/admin/stats`: requests, per model, tokens, peak
    concurrency)."""
    import httpx

    return httpx.get(base_url.removesuffix("/v1") + "/admin/stats", timeout=30).json()


@contextmanager
def running_simulator(
    knobs: SimulatorKnobs | None = None, *, prompts: PromptRegistry
) -> Iterator[str]:
    """A simulator on a free loopback port in a background thread; yields its base URL (ending in
    /v1)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(
        ("127.0.0.1", 0)
    )  # bound here and handed over, so no other process can take the port meanwhile
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_simulator(prompts, knobs),
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"simulator-{port}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the model simulator did not start on 127.0.0.1:{port}")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
