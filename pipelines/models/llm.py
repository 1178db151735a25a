"""The one way ragwatch calls a model: typed prompts in, `LLMResult`s out, never an exception per
item.

Two backends behind `LLM`: `OpenAICompatibleLLM` (vLLM or any OpenAI-compatible server, with
bounded concurrency per endpoint, retries with backoff, structured outputs validated by pydantic
and one repair round) and `OfflineLLM` (each prompt's deterministic `offline`, labelled as such).
Both consult the content-addressed cache first, so a rerun or backfill costs no calls. Failures
come back as `LLMResult.error`, a reason a person can act on; counters summarise a batch in one
log line.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from pipelines.core.records import ToolCall
from pipelines.models.budget import REFUSAL, TokenBudget, estimated_tokens
from pipelines.models.cache import ResponseCache, cache_key
from pipelines.models.offline import OFFLINE_MODEL, choose_tool
from pipelines.models.prompts import In, Out, Prompt
from pipelines.models.usage import UsageLedger, UsageRow, current, default_metric

log = logging.getLogger(__name__)

T = TypeVar("T")
ERROR_DETAIL_CHARS = 300
Progress = Callable[[int, int], None]
"""Called with (done, total) each time an item of `run_many` finishes."""


@dataclass(frozen=True)
class LLMResult(Generic[T]):
    value: T | None
    error: str | None
    """Why the call failed, for a person: "timeout after 3 attempts (0.5 s each)", "HTTP 500 after 5
    attempts"."""
    model: str
    cached: bool = False
    attempts: int = 0
    """Requests sent for this item, retries and the repair included; 0 when cached."""
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None


ToolCallResult = LLMResult[list[ToolCall]]
"""The tool calls the model chose (an empty list when it answered in text instead)."""


class LLMCounters:
    """Totals over every call of one LLM instance, and the same per stage and metric (`usage`,
    usage.py); safe to update from several threads."""

    FIELDS = (
        "items",
        "calls",
        "cache_hits",
        "failures",
        "retries",
        "repairs",
        "sample_requests",
        "prompt_tokens",
        "completion_tokens",
    )
    """`sample_requests`: samples asked for one by one because the server sent fewer choices than
    `n`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.items = self.calls = self.cache_hits = self.failures = self.retries = self.repairs = 0
        self.sample_requests = 0
        self.prompt_tokens = self.completion_tokens = 0
        self.latency_s = self.llm_seconds = 0.0
        self.failure_kinds: Counter[str] = Counter()
        self.usage = UsageLedger()

    def add(self, **amounts: float) -> None:
        with self._lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)
        if scoped := {
            _IN_LEDGER[name]: amount for name, amount in amounts.items() if name in _IN_LEDGER
        }:
            self.usage.add(current(), **scoped)

    def record(self, result: LLMResult) -> None:
        with self._lock:
            self.items += 1
            self.cache_hits += result.cached
            self.latency_s += result.latency_s
            if result.error is not None:
                self.failures += 1
                self.failure_kinds[_failure_kind(result.error)] += 1
        self.usage.add(
            current(), cache_hits=int(result.cached), failures=int(result.error is not None)
        )

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {
                **{name: getattr(self, name) for name in self.FIELDS},
                "latency_s": round(self.latency_s, 3),
                "llm_seconds": round(self.llm_seconds, 3),
                "failure_kinds": dict(self.failure_kinds),
            }

    def log(self, logger: logging.Logger, label: str) -> None:
        s = self.summary()
        kinds = ", ".join(f"{kind} ×{n}" for kind, n in sorted(s["failure_kinds"].items()))
        logger.log(
            logging.WARNING if s["failures"] else logging.INFO,
            "%s: %d items (%d cached, %d failed%s); %d requests (%d retries, %d repairs); "
            "tokens %s prompt + %s completion; %.1f s summed latency",
            label,
            s["items"],
            s["cache_hits"],
            s["failures"],
            f": {kinds}" if kinds else "",
            s["calls"],
            s["retries"],
            s["repairs"],
            f"{s['prompt_tokens']:,}",
            f"{s['completion_tokens']:,}",
            s["latency_s"],
        )


_IN_LEDGER = {
    "calls": "requests",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "llm_seconds": "llm_seconds",
}
"""Counters that are also kept per stage and metric, under the ledger's names."""


def _failure_kind(error: str) -> str:
    # Reasons read "<kind> after N attempts ..." or "<kind>: detail"; the kind groups them in the
    # summary.
    return re.split(r" after |: | \(", error, maxsplit=1)[0]


class LLM(ABC):
    """A model backend. `run` and `chat_with_tools` report failures in the result, never by raising.

    The exception is NotImplementedError (a prompt without the implementation this backend needs):
    that is a setup error every item would hit, so it propagates.
    """

    model: str
    role: str = "llm"
    """"judge" or "generator" when `build_llm` made it: the usage rows say whose endpoint served a
    request."""
    seed: int | None = None
    """Sent as OpenAI's `seed` with every prompt that samples (temperature > 0); vLLM then draws
    from that seed. None (the default) lets the server draw; the judge's retest sets one
    (metrics/judge_retest.py)."""
    cache_namespace: str | None = None
    """Keeps this client's cache entries apart from every other client's: the judge's retest never
    reads the first judgement's reply (it would be the first judgement again), yet a rerun of the
    retest replays its own."""

    def __init__(self, cache: ResponseCache | None = None):
        self.cache = cache
        self.counters = LLMCounters()
        self.budget = TokenBudget(None)
        """The tokens this client may spend (models/budget.py); a step hands its clients one shared
        budget."""
        self._traceback_logged = False

    async def run(self, prompt: Prompt[In, Out], inputs: In) -> LLMResult[Out]:
        return await self._timed(self._run(prompt, inputs), prompt.name)

    async def chat_with_tools(self, messages: list[dict], tools: list[dict]) -> ToolCallResult:
        return await self._timed(self._chat_with_tools(messages, tools), "tool_call")

    def usage_rows(self) -> list[UsageRow]:
        """What this instance's calls cost, per stage and metric (usage.py)."""
        return self.counters.usage.rows(self.role, self.model)

    async def run_many(
        self, prompt: Prompt[In, Out], inputs_list: Sequence[In], progress: Progress | None = None
    ) -> list[LLMResult[Out]]:
        """Results in input order; concurrency is bounded by the backend, not by the caller."""
        done, total = 0, len(inputs_list)

        async def one(inputs: In) -> LLMResult[Out]:
            nonlocal done
            result = await self.run(prompt, inputs)
            done += 1
            if progress is not None:
                progress(done, total)
            return result

        return list(await asyncio.gather(*(one(inputs) for inputs in inputs_list)))

    async def run_samples(
        self, prompt: Prompt[In, Out], inputs: In, n: int
    ) -> LLMResult[list[Out]]:
        """`n` independent samples of one prompt, asked for in one request (OpenAI's `n`, which vLLM
        honours: the prompt is sent and prefilled once). Give the prompt a temperature above 0, or
        the samples are one reply n times. All n come back, or the result fails with the reason."""
        if n < 1:
            raise ValueError(f"n must be at least 1, not {n}")
        return await self._timed(self._run_samples(prompt, inputs, n), prompt.name)

    def run_sync(self, prompt: Prompt[In, Out], inputs: In) -> LLMResult[Out]:
        return self._blocking(lambda: self.run(prompt, inputs))

    def run_many_sync(
        self, prompt: Prompt[In, Out], inputs_list: Sequence[In], progress: Progress | None = None
    ) -> list[LLMResult[Out]]:
        return self._blocking(lambda: self.run_many(prompt, inputs_list, progress))

    async def aclose(self) -> None:
        """Release the connections opened in the running event loop."""

    @abstractmethod
    async def _run(self, prompt: Prompt[In, Out], inputs: In) -> LLMResult[Out]: ...

    @abstractmethod
    async def _chat_with_tools(self, messages: list[dict], tools: list[dict]) -> ToolCallResult: ...

    async def _run_samples(
        self, prompt: Prompt[In, Out], inputs: In, n: int
    ) -> LLMResult[list[Out]]:
        raise NotImplementedError(
            f"{type(self).__name__} cannot ask for several samples of a prompt"
        )

    async def _timed(self, call: Awaitable[LLMResult], metric: str) -> LLMResult:
        """`call`'s result, timed and counted (under the caller's usage scope; `metric` when it
        names none)."""
        started = time.monotonic()
        with default_metric(metric):
            try:
                result = await call
            except NotImplementedError:
                raise
            except (
                Exception
            ) as exc:  # a bug met by one item must not sink the batch; the reason travels with it
                log.warning(
                    "%s: unexpected %s",
                    self.model,
                    type(exc).__name__,
                    exc_info=not self._traceback_logged,
                )
                self._traceback_logged = True
                result = LLMResult(None, f"{type(exc).__name__}: {exc}", self.model)
            result = dataclasses.replace(result, latency_s=time.monotonic() - started)
            self.counters.record(result)
        return result

    def _blocking(self, make_call: Callable[[], Awaitable[T]]) -> T:
        async def call_then_close() -> T:
            try:
                return await make_call()
            finally:
                await self.aclose()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(call_then_close())
        # Called from inside a running loop (a notebook, an async task): asyncio.run refuses there,
        # so the work gets a private thread and loop.
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, call_then_close()).result()

    # A key holds everything the reply depends on; with no cache there is no key and nothing is
    # stored.
    def _prompt_key(self, prompt: Prompt, messages: list[dict], n: int = 1) -> str | None:
        if self.cache is None:
            return None
        return cache_key(
            model=self.model,
            messages=messages,
            **prompt_params(prompt, n, self.seed),
            **self._namespace(),
        )

    def _tools_key(self, messages: list[dict], tools: list[dict]) -> str | None:
        if self.cache is None:
            return None
        return cache_key(
            model=self.model, messages=messages, **tool_params(tools), **self._namespace()
        )

    def _namespace(self) -> dict[str, str]:
        return {"namespace": self.cache_namespace} if self.cache_namespace else {}

    def _cached_value(self, key: str | None, prompt: Prompt[In, Out]) -> LLMResult[Out] | None:
        entry = self.cache.get(key) if key else None
        if entry is None:
            return None
        return LLMResult(
            prompt.output_model.model_validate(entry["value"]), None, self.model, cached=True
        )

    def _cached_values(
        self, key: str | None, prompt: Prompt[In, Out]
    ) -> LLMResult[list[Out]] | None:
        entry = self.cache.get(key) if key else None
        if entry is None:
            return None
        values = [prompt.output_model.model_validate(value) for value in entry["values"]]
        return LLMResult(values, None, self.model, cached=True)

    def _cached_tool_calls(self, key: str | None) -> ToolCallResult | None:
        entry = self.cache.get(key) if key else None
        if entry is None:
            return None
        return LLMResult(
            [ToolCall.model_validate(c) for c in entry["tool_calls"]], None, self.model, cached=True
        )

    def _refused(self) -> LLMResult:
        """The result of a call the token budget did not let through: no request was sent."""
        return LLMResult(None, REFUSAL, self.model)

    def _remember_value(self, key: str | None, value: BaseModel) -> None:
        if key:
            self.cache.put(key, {"value": value.model_dump(mode="json")})

    def _remember_values(self, key: str | None, values: list[BaseModel]) -> None:
        if key:
            self.cache.put(key, {"values": [value.model_dump(mode="json") for value in values]})

    def _remember_tool_calls(self, key: str | None, calls: list[ToolCall]) -> None:
        if key:
            self.cache.put(key, {"tool_calls": [c.model_dump(mode="json") for c in calls]})


def prompt_params(prompt: Prompt, n: int = 1, seed: int | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "response_format": {"type": "json_schema", "json_schema": prompt.json_schema()},
        "temperature": prompt.temperature,
    }
    if prompt.max_tokens is not None:
        params["max_tokens"] = prompt.max_tokens
    if n > 1:
        params["n"] = n
    # A greedy (temperature 0) reply does not depend on a seed: sending none keeps those requests
    # byte-identical.
    if seed is not None and prompt.temperature > 0:
        params["seed"] = seed
    return params


def tool_params(tools: list[dict]) -> dict[str, Any]:
    return {"tools": tools, "tool_choice": "auto", "temperature": 0.0}


class OfflineLLM(LLM):
    """Each prompt's deterministic `offline` implementation; every output names this model."""

    model = OFFLINE_MODEL

    async def _run(self, prompt: Prompt[In, Out], inputs: In) -> LLMResult[Out]:
        key = self._prompt_key(prompt, prompt.messages(inputs)) if self.cache is not None else None
        if (hit := self._cached_value(key, prompt)) is not None:
            return hit
        if not self.budget.allows():
            return self._refused()
        value = await self._computed(lambda: prompt.offline(inputs))
        self._charge_estimate(lambda: prompt.messages(inputs), value.model_dump_json())
        self._remember_value(key, value)
        return LLMResult(value, None, self.model, attempts=1)

    async def _run_samples(
        self, prompt: Prompt[In, Out], inputs: In, n: int
    ) -> LLMResult[list[Out]]:
        key = (
            self._prompt_key(prompt, prompt.messages(inputs), n) if self.cache is not None else None
        )
        if (hit := self._cached_values(key, prompt)) is not None:
            return hit
        if not self.budget.allows():
            return self._refused()
        values = await self._computed(lambda: [prompt.offline_sample(inputs, k) for k in range(n)])
        self._charge_estimate(
            lambda: prompt.messages(inputs), *(value.model_dump_json() for value in values)
        )
        self._remember_values(key, values)
        return LLMResult(values, None, self.model, attempts=1)

    async def _chat_with_tools(self, messages: list[dict], tools: list[dict]) -> ToolCallResult:
        key = self._tools_key(messages, tools)
        if (hit := self._cached_tool_calls(key)) is not None:
            return hit
        if not self.budget.allows():
            return self._refused()
        calls = await self._computed(lambda: choose_tool(messages, tools))
        self._charge_estimate(
            lambda: [*messages, *tools], *(call.model_dump_json() for call in calls)
        )
        self._remember_tool_calls(key, calls)
        return LLMResult(calls, None, self.model, attempts=1)

    def _charge_estimate(self, request: Callable[[], list[dict]], *replies: str) -> None:
        """The offline backend reports no usage: a capped budget is charged its request's and
        reply's characters / 4 (models/budget.py). Without a cap nothing is rendered for it."""
        if self.budget.cap is not None:
            self.budget.charge(
                estimated_tokens(json.dumps(request(), ensure_ascii=False), *replies)
            )

    async def _computed(self, answer: Callable[[], T]) -> T:
        """One offline "request": counted as one, its compute time as LLM-seconds. Off the event
        loop: some offline answers embed text or scan corpora."""
        self.counters.add(calls=1)
        started = time.monotonic()
        try:
            return await asyncio.to_thread(answer)
        finally:
            self.counters.add(llm_seconds=time.monotonic() - started)
