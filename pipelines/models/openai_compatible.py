"""`OpenAICompatibleLLM`: vLLM or any OpenAI-compatible server behind `LLM` (bounded concurrency per
endpoint, retries with backoff, structured outputs validated by pydantic and one repair round)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import random
import re
import ssl
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx
from pydantic import BaseModel, ValidationError

from pipelines.models.budget import REFUSAL, estimated_tokens
from pipelines.models.cache import ResponseCache
from pipelines.models.prompts import SAMPLE_NOTE, In, Out, Prompt, repair_messages
from pipelines.core.records import ToolCall
from pipelines.core.settings import ModelEndpoint

from pipelines.models.llm import (
    ERROR_DETAIL_CHARS,
    LLM,
    LLMResult,
    ToolCallResult,
    prompt_params,
    tool_params,
)

log = logging.getLogger(__name__)


@dataclass
class _Reply:
    message: dict[str, Any] | None
    """The first choice's message, as the server sent it."""
    error: str | None
    attempts: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    contents: list[str | None] = dataclasses.field(default_factory=list)
    """The text of every choice, in order."""


def _usage(replies: Sequence[_Reply]) -> dict[str, int]:
    return {
        "attempts": sum(r.attempts for r in replies),
        "prompt_tokens": sum(r.prompt_tokens for r in replies),
        "completion_tokens": sum(r.completion_tokens for r in replies),
    }


class OpenAICompatibleLLM(LLM):
    """A model served over the OpenAI API (vLLM: start it with guided decoding, and with
    `--enable-auto-tool-choice` for `chat_with_tools`).

    Requests are JSON bodies posted with aiohttp, not the `openai` SDK nor httpx: the SDK's request
    transform and response models, and httpx's connection-pool bookkeeping, cost milliseconds of CPU
    per request (httpx about 3 ms, aiohttp under 1 ms), which at a few dozen requests in flight
    leaves the server's slots idle while the event loop is busy (`ragwatch bench eval` measures
    it)."""

    def __init__(
        self,
        endpoint: ModelEndpoint,
        cache: ResponseCache | None = None,
        *,
        backoff_s: float = 0.5,
        max_backoff_s: float = 20.0,
    ):
        super().__init__(cache)
        self.endpoint, self.model = endpoint, endpoint.model
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self._url = endpoint.base_url.rstrip("/") + "/chat/completions"
        self._clients: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        self._clients_lock = threading.Lock()
        self._random = random.Random()
        self._tls = _tls_context()

    async def _run(self, prompt: Prompt[In, Out], inputs: In) -> LLMResult[Out]:
        messages, params = prompt.messages(inputs), prompt_params(prompt, seed=self.seed)
        key = self._prompt_key(prompt, messages)
        if (hit := self._cached_value(key, prompt)) is not None:
            return hit

        first = await self._complete(messages, params)
        if first.error is not None:
            return LLMResult(None, first.error, self.model, **_usage([first]))
        value, problem, repairs = await self._validated(
            prompt.output_model, messages, params, first.contents[0]
        )
        usage = _usage([first, *repairs])
        if problem is not None:
            return LLMResult(None, problem, self.model, **usage)
        self._remember_value(key, value)
        return LLMResult(value, None, self.model, **usage)

    async def _run_samples(
        self, prompt: Prompt[In, Out], inputs: In, n: int
    ) -> LLMResult[list[Out]]:
        messages, params = prompt.messages(inputs), prompt_params(prompt, n, self.seed)
        key = self._prompt_key(prompt, messages, n)
        if (hit := self._cached_values(key, prompt)) is not None:
            return hit
        one = {name: value for name, value in params.items() if name != "n"}
        replies = [await self._complete(messages, params)]
        if replies[0].error is not None:
            return LLMResult(None, replies[0].error, self.model, **_usage(replies))
        contents = replies[0].contents[:n]
        # A server that ignores `n` (llama.cpp's does) sends one choice: the others are asked for
        # one by one, each under a note naming its sample, so that they stay independent samples.
        for k in range(len(contents), n):
            noted = [{"role": "system", "content": SAMPLE_NOTE.format(number=k + 1)}, *messages]
            self.counters.add(sample_requests=1)
            replies.append(await self._complete(noted, one))
            if replies[-1].error is not None:
                return LLMResult(
                    None,
                    f"sample {k + 1} of {n}: {replies[-1].error}",
                    self.model,
                    **_usage(replies),
                )
            contents.append(replies[-1].contents[0])
        values = []
        for k, content in enumerate(contents):
            value, problem, repairs = await self._validated(
                prompt.output_model, messages, one, content
            )
            replies += repairs
            if problem is not None:
                return LLMResult(
                    None, f"sample {k + 1} of {n}: {problem}", self.model, **_usage(replies)
                )
            values.append(value)
        self._remember_values(key, values)
        return LLMResult(values, None, self.model, **_usage(replies))

    async def _validated(
        self,
        output_model: type[Out],
        messages: list[dict],
        params: dict[str, Any],
        content: str | None,
    ) -> tuple[Out | None, str | None, list[_Reply]]:
        """The reply's value, or why there is none; an invalid reply is shown to the model with the
        error, once. Also returns the repair request's reply, when one was sent."""
        value, problem = _parse(output_model, content)
        if problem is None:
            return value, None, []
        self.counters.add(repairs=1)
        repair = await self._complete(repair_messages(messages, content or "", problem), params)
        if repair.error is not None:
            return None, f"repair request failed: {repair.error}", [repair]
        value, problem = _parse(output_model, repair.contents[0])
        if problem is not None:
            kind, _, detail = problem.partition(": ")
            return None, f"{kind} after repair: {detail}", [repair]
        return value, None, [repair]

    async def _chat_with_tools(self, messages: list[dict], tools: list[dict]) -> ToolCallResult:
        key = self._tools_key(messages, tools)
        if (hit := self._cached_tool_calls(key)) is not None:
            return hit
        reply = await self._complete(messages, tool_params(tools))
        usage = {
            "attempts": reply.attempts,
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
        }
        if reply.error is not None:
            return LLMResult(None, reply.error, self.model, **usage)
        calls, unreadable = [], []
        for call in reply.message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except (json.JSONDecodeError, TypeError):
                arguments = None
            if not isinstance(arguments, dict):
                unreadable.append(function.get("name"))
                arguments = {}
            calls.append(ToolCall(name=function.get("name"), arguments=arguments))
        if unreadable:
            # The chosen tool names still come back: tool selection is scored on them.
            return LLMResult(
                calls,
                f"invalid tool arguments: not a JSON object for {', '.join(unreadable)}",
                self.model,
                **usage,
            )
        self._remember_tool_calls(key, calls)
        return LLMResult(calls, None, self.model, **usage)

    async def aclose(self) -> None:
        with self._clients_lock:
            client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    async def _complete(self, messages: list[dict], params: dict[str, Any]) -> _Reply:
        """One chat completion with retries; the endpoint's limit is held only while a request is in
        flight."""
        client, limit = self._client(), _endpoint_limit(self.endpoint)
        body = json.dumps(
            {"model": self.model, "messages": messages, **params}, ensure_ascii=False
        ).encode()
        attempts = 0
        while True:
            attempts += 1
            retry_after = None
            try:
                async with limit:
                    # Checked once a slot is free: the cap may have been reached while this request
                    # waited.
                    if not self.budget.allows():
                        return _Reply(None, REFUSAL, attempts - 1)
                    self.counters.add(calls=1)
                    sent = time.monotonic()
                    try:
                        # The client's own timeout bounds each socket read, not the whole request: a
                        # server trickling bytes could hold it for ever, so the request as a whole
                        # is bounded too.
                        async with asyncio.timeout(self.endpoint.timeout_s):
                            async with client.post(self._url, data=body) as response:
                                reply = _HTTPReply(
                                    response.status,
                                    response.reason or "",
                                    response.headers.get("retry-after"),
                                    await response.read(),
                                )
                    finally:
                        self.counters.add(llm_seconds=time.monotonic() - sent)
                if 200 <= reply.status < 300:
                    return self._reply(reply, attempts, body)
                status = reply.status
                if status != 429 and status < 500:
                    return _Reply(None, f"HTTP {status}: {_server_message(reply)}", attempts)
                problem = f"HTTP {status} after {attempts} attempts: {_server_message(reply)}"
                retry_after = _retry_after(reply)
            except TimeoutError:  # aiohttp's socket timeouts are TimeoutErrors too
                problem = f"timeout after {attempts} attempts ({self.endpoint.timeout_s:g} s each)"
            except aiohttp.ClientError as exc:
                problem = (
                    f"connection error after {attempts} attempts: {str(exc) or type(exc).__name__}"
                )
            if attempts > self.endpoint.max_retries:
                return _Reply(None, problem, attempts)
            self.counters.add(retries=1)
            await asyncio.sleep(self._backoff(attempts, retry_after))

    def _reply(self, response: _HTTPReply, attempts: int, sent: bytes) -> _Reply:
        try:
            completion = json.loads(response.body)
        except ValueError:
            completion = None
        if not isinstance(completion, dict):
            return _Reply(
                None,
                f"unreadable reply: not a JSON object: {response.text[:ERROR_DETAIL_CHARS]}",
                attempts,
            )
        usage = completion.get("usage") or {}
        prompt_tokens, completion_tokens = (
            usage.get("prompt_tokens") or 0,
            usage.get("completion_tokens") or 0,
        )
        self.counters.add(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        # A server that reports no usage is charged an estimate, so that a cap still holds
        # (models/budget.py).
        reported = "prompt_tokens" in usage or "completion_tokens" in usage
        self.budget.charge(
            prompt_tokens + completion_tokens
            if reported
            else estimated_tokens(sent.decode("utf-8", errors="replace"), response.text)
        )
        messages = [choice.get("message") or {} for choice in completion.get("choices") or []]
        contents = [message.get("content") for message in messages]
        return _Reply(
            messages[0] if messages else None,
            None if messages else "empty reply: no choices",
            attempts,
            prompt_tokens,
            completion_tokens,
            contents,
        )

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        # Equal jitter: never retry at once, and clients that failed together spread out.
        ceiling = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        delay = ceiling / 2 + self._random.uniform(0, ceiling / 2)
        return max(delay, min(retry_after or 0.0, self.max_backoff_s))

    def _client(self) -> aiohttp.ClientSession:
        # A connection pool belongs to the loop that opened it, so each loop gets its own session.
        loop = asyncio.get_running_loop()
        with self._clients_lock:
            if loop not in self._clients:
                for stale in [other for other in self._clients if other.is_closed()]:
                    del self._clients[stale]
                timeout = self.endpoint.timeout_s
                self._clients[loop] = aiohttp.ClientSession(
                    headers={
                        "Authorization": f"Bearer {self.endpoint.api_key.get_secret_value()}",
                        "Content-Type": "application/json",
                    },
                    # Each connect and socket read is bounded, as httpx's timeout did; `_complete`
                    # bounds the whole.
                    timeout=aiohttp.ClientTimeout(
                        total=None, sock_connect=timeout, sock_read=timeout
                    ),
                    # The endpoint's limit bounds what is in flight, not the pool.
                    connector=aiohttp.TCPConnector(limit=0, ssl=self._tls),
                    trust_env=True,  # proxy variables, as httpx honoured them
                )
            return self._clients[loop]


def _parse(
    output_model: type[BaseModel], content: str | None
) -> tuple[BaseModel | None, str | None]:
    """The validated value of a reply's text, or why there is none ("<kind>: <detail>")."""
    if not content:
        return None, "invalid JSON: empty reply"
    try:
        return output_model.model_validate_json(_strip_code_fence(content)), None
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        kind = (
            "invalid JSON"
            if any(e["type"] == "json_invalid" for e in errors)
            else "schema mismatch"
        )
        detail = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in errors)
        return None, f"{kind}: {detail[:ERROR_DETAIL_CHARS]}"


def _strip_code_fence(content: str) -> str:
    # Without guided decoding, instruction-tuned models often wrap JSON in a markdown fence.
    fenced = re.fullmatch(r"\s*```(?:json)?\s*(.*?)\s*```\s*", content, re.S)
    return fenced.group(1) if fenced else content


@dataclass(frozen=True)
class _HTTPReply:
    """What `_complete` keeps of a response, read in full while the request's time limit runs."""

    status: int
    reason: str
    retry_after: str | None
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def _server_message(response: _HTTPReply) -> str:
    """The server's own words: OpenAI-style servers (vLLM, the simulator) send
    {"error": {"message": ...}}."""
    try:
        body = json.loads(response.body)
    except ValueError:
        body = response.text.strip()
    if isinstance(body, dict):
        body = body.get("error", body)
    message = body.get("message") if isinstance(body, dict) else None
    return str(message or body or response.reason)[:ERROR_DETAIL_CHARS]


def _retry_after(response: _HTTPReply) -> float | None:
    try:
        return float(response.retry_after or "")
    except ValueError:
        return None


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle takes tens of milliseconds: once per process, when the first LLM is
    # built, rather than in every client (one per event loop) on its first request.
    return httpx.create_ssl_context()


# Semaphores bind to the loop they first wait in, so the limit shared by every client of an
# endpoint is kept per event loop. Entries of closed loops are dropped when a new loop arrives.
_LIMITS: dict[asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Semaphore]] = {}
_LIMITS_LOCK = threading.Lock()


def _endpoint_limit(endpoint: ModelEndpoint) -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    with _LIMITS_LOCK:
        if loop not in _LIMITS:
            for stale in [other for other in _LIMITS if other.is_closed()]:
                del _LIMITS[stale]
        per_endpoint = _LIMITS.setdefault(loop, {})
        key = (endpoint.base_url.rstrip("/"), endpoint.model)
        if key not in per_endpoint:
            per_endpoint[key] = asyncio.Semaphore(endpoint.max_concurrency)
        return per_endpoint[key]
