"""The real OpenAI-compatible client, over HTTP, against the simulator and its injected faults."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import BaseModel

from pipelines.models.cache import LLMCache, cache_key
from pipelines.models.backends import build_llm, check_models_differ
from pipelines.models.llm import OfflineLLM
from pipelines.models.offline import OFFLINE_MODEL
from pipelines.models.openai_compatible import OpenAICompatibleLLM
from pipelines.models.prompts import Prompt, PromptRegistry
from pipelines.models.simulator import SimulatorKnobs, hashed_bag_of_words, running_simulator
from pipelines.core.settings import ModelEndpoint, Settings

ROOT = Path(__file__).resolve().parents[4]
TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": {"type": "object"}},
    }
    for name in ("vector_search", "sql_query")
]


class Phrase(BaseModel):
    text: str


class Shout(BaseModel):
    upper: str
    length: int


class ShoutPrompt(Prompt[Phrase, Shout]):
    name = "test_shout"
    input_model, output_model = Phrase, Shout
    instructions = "Return the text in upper case and its length."

    def offline(self, inputs: Phrase) -> Shout:
        return Shout(upper=inputs.text.upper(), length=len(inputs.text))


class UnregisteredPrompt(ShoutPrompt):
    name = "test_never_registered"


class SampledShout(ShoutPrompt):
    """Samples differ offline (as a model's do at a temperature above 0)."""

    name = "test_sampled_shout"
    temperature = 0.3

    def offline_sample(self, inputs: Phrase, index: int) -> Shout:
        return Shout(upper=f"{inputs.text.upper()} #{index + 1}", length=len(inputs.text))


class Simulator:
    def __init__(self, base_url: str):
        self.base_url = base_url
        self.admin = base_url.removesuffix("/v1") + "/admin"

    def set(self, **knobs) -> None:
        httpx.post(
            f"{self.admin}/knobs", json=SimulatorKnobs(**knobs).model_dump()
        ).raise_for_status()

    def stats(self) -> dict:
        return httpx.get(f"{self.admin}/stats").json()

    def llm(self, cache: LLMCache | None = None, **endpoint) -> OpenAICompatibleLLM:
        fields = {
            "model": "sim-model",
            "max_concurrency": 8,
            "timeout_s": 2.0,
            "max_retries": 2,
            **endpoint,
        }
        return OpenAICompatibleLLM(
            ModelEndpoint(base_url=self.base_url, **fields), cache, backoff_s=0.01
        )


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with running_simulator(prompts=PromptRegistry([ShoutPrompt(), SampledShout()])) as base_url:
        yield Simulator(base_url)


def phrases(n: int) -> list[Phrase]:
    return [Phrase(text=f"phrase number {i}") for i in range(n)]


def test_structured_output_round_trip(sim):
    llm = sim.llm()
    result = llm.run_sync(ShoutPrompt(), Phrase(text="hola"))
    assert result.ok and result.value == Shout(upper="HOLA", length=4)
    assert (result.model, result.cached, result.attempts) == ("sim-model", False, 1)
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert llm.counters.summary()["calls"] == 1


def test_latency_and_capacity_are_respected(sim):
    sim.set(latency_s=0.2, capacity=4)
    llm = sim.llm(max_concurrency=8)
    seen = []
    started = time.monotonic()
    results = llm.run_many_sync(
        ShoutPrompt(), phrases(12), progress=lambda done, total: seen.append((done, total))
    )
    wall = time.monotonic() - started
    assert [r.value.upper for r in results] == [
        p.text.upper() for p in phrases(12)
    ]  # input order kept
    # Three waves of four: the server's capacity, not the client's 8, sets the pace (no upper bound
    # on a wall time: a loaded CI machine only makes it longer; max_concurrent below pins the
    # capacity).
    assert wall >= 0.55
    stats = sim.stats()
    assert stats["max_concurrent"] == 4 and stats["max_queued"] >= 4 and stats["served"] == 12
    assert seen[-1] == (12, 12) and len(seen) == 12


def test_client_limit_is_shared_by_every_instance_of_an_endpoint(sim):
    sim.set(latency_s=0.1, capacity=64)
    first, second = sim.llm(max_concurrency=3), sim.llm(max_concurrency=3)

    async def both():
        return await asyncio.gather(
            first.run_many(ShoutPrompt(), phrases(6)), second.run_many(ShoutPrompt(), phrases(6))
        )

    asyncio.run(both())
    assert sim.stats()["max_concurrent"] == 3


def test_transient_500s_and_429s_are_retried(sim):
    sim.set(fail_first_n=3)
    llm = sim.llm(max_retries=4)
    result = llm.run_sync(ShoutPrompt(), Phrase(text="x"))
    assert result.ok and result.attempts == 4
    assert llm.counters.summary()["retries"] == 3

    sim.set(rate_limit_rate=0.3, seed=7)
    llm = sim.llm(max_retries=8)
    results = llm.run_many_sync(ShoutPrompt(), phrases(6))
    assert all(r.ok for r in results)
    assert sim.stats()["faults"].get("rate_limit", 0) == llm.counters.summary()["retries"]


def test_permanent_errors_become_reasons_not_exceptions(sim):
    sim.set(error_rate=1.0)
    llm = sim.llm(max_retries=2)
    results = llm.run_many_sync(ShoutPrompt(), phrases(3))
    assert [r.error.split(":")[0] for r in results] == ["HTTP 500 after 3 attempts"] * 3
    assert all(r.value is None and not r.ok and r.attempts == 3 for r in results)
    assert sim.stats()["requests"] == 9
    assert llm.counters.summary()["failure_kinds"] == {"HTTP 500": 3}

    sim.set(rate_limit_rate=1.0)
    assert llm.run_sync(ShoutPrompt(), Phrase(text="x")).error.startswith(
        "HTTP 429 after 3 attempts"
    )


def test_client_errors_are_not_retried(sim):
    llm = sim.llm(max_retries=3)
    result = llm.run_sync(UnregisteredPrompt(), Phrase(text="x"))
    assert result.attempts == 1
    assert result.error.startswith("HTTP 400: unknown prompt 'test_never_registered'")


def test_malformed_reply_is_repaired_once(sim):
    sim.set(malformed_rate=1.0)
    llm = sim.llm()
    result = llm.run_sync(ShoutPrompt(), Phrase(text="abc"))
    assert result.ok and result.value.upper == "ABC" and result.attempts == 2
    assert llm.counters.summary()["repairs"] == 1
    assert sim.stats()["faults"] == {"malformed": 1}


def test_malformed_twice_fails_with_the_reason(sim):
    sim.set(malformed_rate=1.0, malformed_repairs=True)
    llm = sim.llm()
    result = llm.run_sync(ShoutPrompt(), Phrase(text="abc"))
    assert result.value is None and result.attempts == 2
    assert result.error.startswith("invalid JSON after repair: ")


def test_timeouts_are_retried_then_fail_within_a_bounded_time(sim):
    sim.set(timeout_rate=1.0)
    llm = sim.llm(timeout_s=0.5, max_retries=2)
    started = time.monotonic()
    result = llm.run_sync(ShoutPrompt(), Phrase(text="x"))
    assert (
        time.monotonic() - started < 10.0
    )  # bounded: 3 x 0.5 s plus backoff, never the client's default
    assert result.error == "timeout after 3 attempts (0.5 s each)"
    assert sim.stats()["faults"] == {"timeout": 3}
    assert llm.counters.summary()["retries"] == 2


def test_a_rerun_is_served_from_the_cache(sim, tmp_path):
    cache = LLMCache.in_directory(tmp_path)
    sim.set(fail_first_n=3)
    failed = sim.llm(cache, max_retries=2).run_sync(ShoutPrompt(), Phrase(text="phrase number 0"))
    assert not failed.ok and cache.count() == 0  # failures are never cached

    sim.set()
    first = sim.llm(cache).run_many_sync(ShoutPrompt(), phrases(5))
    requests_before = sim.stats()["requests"]
    rerun = sim.llm(cache)
    again = rerun.run_many_sync(ShoutPrompt(), phrases(5))
    assert [r.value for r in again] == [r.value for r in first]
    assert all(r.cached and r.attempts == 0 for r in again)
    assert sim.stats()["requests"] == requests_before
    summary = rerun.counters.summary()
    assert (summary["calls"], summary["cache_hits"], summary["items"]) == (0, 5, 5)


def test_n_samples_come_back_from_one_request_and_a_rerun_from_the_cache(sim, tmp_path):
    cache = LLMCache.in_directory(tmp_path)
    llm = sim.llm(cache)
    result = asyncio.run(llm.run_samples(SampledShout(), Phrase(text="abc"), 3))
    assert result.ok and [v.upper for v in result.value] == ["ABC #1", "ABC #2", "ABC #3"]
    stats = sim.stats()
    assert (
        stats["requests"] == 1 and result.attempts == 1
    )  # one prompt, prefilled once, three completions
    assert result.prompt_tokens == stats["prompt_tokens"] > 0

    rerun = asyncio.run(sim.llm(cache).run_samples(SampledShout(), Phrase(text="abc"), 3))
    assert rerun.cached and rerun.value == result.value and sim.stats()["requests"] == 1
    # A different n is a different request: never served from the entry of another n.
    assert (
        asyncio.run(sim.llm(cache).run_samples(SampledShout(), Phrase(text="abc"), 2)).cached
        is False
    )
    offline = asyncio.run(OfflineLLM().run_samples(SampledShout(), Phrase(text="abc"), 3))
    assert offline.value == result.value
    with pytest.raises(ValueError, match="at least 1"):
        asyncio.run(llm.run_samples(SampledShout(), Phrase(text="abc"), 0))


def test_a_server_that_ignores_n_gets_the_other_samples_asked_one_by_one(sim):
    sim.set(ignore_n=True)  # llama.cpp's server answers one choice whatever n asks
    llm = sim.llm()
    result = asyncio.run(llm.run_samples(SampledShout(), Phrase(text="abc"), 3))
    assert result.ok and [v.upper for v in result.value] == ["ABC #1", "ABC #2", "ABC #3"]
    assert sim.stats()["requests"] == 3 and result.attempts == 3
    counted = llm.counters.summary()
    assert (
        counted["sample_requests"] == 2
        and counted["calls"] == counted["items"] + counted["sample_requests"] == 3
    )


def test_each_malformed_sample_is_repaired_on_its_own(sim):
    sim.set(malformed_rate=1.0)
    llm = sim.llm()
    result = asyncio.run(llm.run_samples(SampledShout(), Phrase(text="abc"), 3))
    assert (
        result.ok and len(result.value) == 3 and result.attempts == 4
    )  # the n request, then one repair each
    assert llm.counters.summary()["repairs"] == 3

    sim.set(malformed_rate=1.0, malformed_repairs=True)
    failed = asyncio.run(sim.llm().run_samples(SampledShout(), Phrase(text="abc"), 3))
    assert failed.value is None and failed.error.startswith(
        "sample 1 of 3: invalid JSON after repair: "
    )


def test_tool_calls_come_back_parsed(sim):
    llm = sim.llm()
    messages = [{"role": "user", "content": "how many tickets were opened?"}]
    result = asyncio.run(llm.chat_with_tools(messages, TOOLS))
    assert result.ok and [c.name for c in result.value] == ["sql_query"]
    assert "how many tickets were opened?" in result.value[0].arguments["query"]
    offline = asyncio.run(OfflineLLM().chat_with_tools(messages, TOOLS))
    assert offline.value == result.value and offline.model == OFFLINE_MODEL
    search = asyncio.run(
        OfflineLLM().chat_with_tools([{"role": "user", "content": "how do I restart?"}], TOOLS)
    )
    assert [c.name for c in search.value] == ["vector_search"]


def test_offline_backend_runs_tasks_and_names_itself():
    llm = OfflineLLM()
    results = llm.run_many_sync(ShoutPrompt(), phrases(3))
    assert [r.value.length for r in results] == [15, 15, 15]
    assert {r.model for r in results} == {OFFLINE_MODEL}
    assert llm.counters.summary()["calls"] == 3


def test_sync_wrapper_works_inside_a_running_loop():
    async def caller():
        return OfflineLLM().run_sync(ShoutPrompt(), Phrase(text="in a loop"))

    assert asyncio.run(caller()).value.upper == "IN A LOOP"


def test_build_llm_follows_the_backend_setting(tmp_path):
    offline = build_llm(Settings(home=tmp_path), "generator")
    assert isinstance(offline, OfflineLLM)
    served = build_llm(Settings(home=tmp_path, llm_backend="openai"), "judge")
    assert isinstance(served, OpenAICompatibleLLM) and served.model == Settings().judge.model
    assert served.cache is not None


def test_same_generator_and_judge_model_warns(tmp_path, caplog):
    same = Settings(
        home=tmp_path,
        llm_backend="openai",
        generator=ModelEndpoint(model="Qwen/Qwen2.5-7B-Instruct"),
        judge=ModelEndpoint(model="qwen/qwen2.5-7b-instruct"),
    )
    with caplog.at_level(logging.WARNING):
        assert check_models_differ(same, logging.getLogger("ragwatch.test")) is False
    assert "self-preference bias" in caplog.text
    caplog.clear()
    assert check_models_differ(
        Settings(home=tmp_path, llm_backend="openai"), logging.getLogger("ragwatch.test")
    )
    assert caplog.text == ""


def test_counters_log_one_readable_line(caplog):
    llm = OfflineLLM()
    llm.run_many_sync(ShoutPrompt(), phrases(2))
    with caplog.at_level(logging.INFO):
        llm.counters.log(logging.getLogger("ragwatch.test"), "generator")
    assert caplog.messages == [
        "generator: 2 items (0 cached, 0 failed); 2 requests (0 retries, 0 repairs); tokens 0 prompt + 0 completion; "
        f"{llm.counters.latency_s:.1f} s summed latency"
    ]


def test_cache_key_is_canonical_and_values_round_trip(tmp_path):
    assert cache_key(model="m", params={"a": 1, "b": 2}) == cache_key(
        params={"b": 2, "a": 1}, model="m"
    )
    assert cache_key(model="m", temperature=0.0) != cache_key(model="m", temperature=0.7)
    cache = LLMCache.in_directory(tmp_path)
    assert cache.get("missing") is None
    cache.put("k", {"value": {"text": "ñ"}})
    assert LLMCache.in_directory(tmp_path).get("k") == {"value": {"text": "ñ"}}


def test_fallback_embeddings_are_deterministic_unit_vectors():
    first, again = (
        hashed_bag_of_words(["cómo reinicio el clúster"]),
        hashed_bag_of_words(["cómo reinicio el clúster"]),
    )
    assert first == again and len(first[0]) == 384
    assert abs(sum(v * v for v in first[0]) - 1.0) < 1e-9


def test_offline_backend_can_use_the_cache(tmp_path):
    cache = LLMCache.in_directory(tmp_path)
    OfflineLLM(cache).run_many_sync(ShoutPrompt(), phrases(2))
    rerun = OfflineLLM(cache)
    assert all(r.cached for r in rerun.run_many_sync(ShoutPrompt(), phrases(2)))
    assert rerun.counters.summary()["calls"] == 0


def test_cache_is_shared_safely_by_several_processes(tmp_path):
    # The processes open the new cache at one instant, as a DAG's parallel tasks do: its first
    # opening switches the file to WAL, which failed with "database is locked" in about one start in
    # six.
    writer = (
        "import sys, time; from pathlib import Path; from pipelines.models.cache import LLMCache\n"
        "time.sleep(max(0.0, float(sys.argv[3]) - time.time()))\n"
        "cache = LLMCache.in_directory(Path(sys.argv[1]))\n"
        "for i in range(100): cache.put(f'{sys.argv[2]}-{i}', {'i': i})\n"
    )
    start = str(time.time() + 2)
    processes = [
        subprocess.Popen([sys.executable, "-c", writer, str(tmp_path), name, start], cwd=ROOT)
        for name in "abc"
    ]
    assert [p.wait(timeout=30) for p in processes] == [0, 0, 0]
    cache = LLMCache.in_directory(tmp_path)
    assert cache.count() == 300 and cache.get("b-99") == {"i": 99}
