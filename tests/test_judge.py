"""Judge metrics through ragas on our model layer: the brief's worked example, the simulator over
HTTP with injected faults, the cache, noise sensitivity as ΔF, and the tool metrics."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from pipelines.evaluation.judge import JUDGE_METRICS, JudgeInput, judge_items, judge_items_sync
from pipelines.evaluation.prompts import Context, RagAnswerPrompt, RagInput
from pipelines.evaluation.noise import FRAGILE, NoisePool, delta_f, inject, is_fragile, noise_delta_f
from pipelines.evaluation.tools import (
    TSA_THRESHOLD,
    ToolTurn,
    score_tool_turns,
    tool_call_problem,
    tool_call_validity,
    tool_selection_accuracy,
)
from pipelines.models.cache import LLMCache
from pipelines.models.embeddings import LocalEmbedder
from pipelines.models.llm import LLM, LLMResult, OfflineLLM, OpenAICompatibleLLM
from pipelines.models.ragas_adapter import RagasRequest, last_input, prompt_for
from pipelines.models.simulator import SimulatorKnobs, running_simulator
from pipelines.prompt_catalog import all_prompts
from pipelines.records import Score, ToolCall
from pipelines.settings import ModelEndpoint
from pipelines.golden.prompts import ChunkQuestions, ChunkQuestionsInput, SeedChunk
from pipelines.text import sentences
from tests.services import free_port
from ragas.metrics.collections.faithfulness.util import (
    StatementGeneratorInput,
    StatementGeneratorOutput,
    StatementGeneratorPrompt,
)

RUN = {"run_id": "run-1", "suite": "offline", "dataset_version": "v1"}
PORTS = "Qdrant listens on port 6333 for the REST API. The gRPC interface of Qdrant uses port 6334."
SNAPSHOTS = "Snapshots are written to the snapshots directory. A snapshot is restored through the recover endpoint."
QUESTION = "Which port does the Qdrant REST API listen on?"
REFERENCE = "The Qdrant REST API listens on port 6333."


def item(item_id: str, answer: str | None, *, reference: str | None = REFERENCE, contexts=(PORTS, SNAPSHOTS),
         question: str = QUESTION) -> JudgeInput:  # fmt: skip
    return JudgeInput(item_id=item_id, stratum="single_hop/en", question=question, answer=answer,
                      contexts=list(contexts), reference=reference)  # fmt: skip


SUPPORTED = item("supported", "Qdrant listens on port 6333 for the REST API.")
INVENTED = item("invented", "Qdrant listens on port 6333 for the REST API. Qdrant was written in Haskell at CERN.")
OFF_TOPIC = item("off-topic", "Bananas grow in tropical climates and are rich in potassium.")


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    embedder = LocalEmbedder()
    embedder.embed(["warm up"])  # load the model once for the module
    return embedder


class Simulator:
    def __init__(self, base_url: str):
        self.base_url, self.admin = base_url, base_url.removesuffix("/v1") + "/admin"

    def set(self, **knobs) -> None:
        httpx.post(f"{self.admin}/knobs", json=SimulatorKnobs(**knobs).model_dump()).raise_for_status()

    def requests(self) -> int:
        return httpx.get(f"{self.admin}/stats").json()["requests"]

    def llm(self, cache: LLMCache | None = None, **endpoint) -> OpenAICompatibleLLM:
        fields = {"model": "sim-judge", "max_concurrency": 16, "timeout_s": 5.0, "max_retries": 2, **endpoint}
        return OpenAICompatibleLLM(ModelEndpoint(base_url=self.base_url, **fields), cache, backoff_s=0.01)


@pytest.fixture(scope="module")
def simulator() -> Iterator[Simulator]:
    with running_simulator(prompts=all_prompts()) as base_url:
        yield Simulator(base_url)


@pytest.fixture
def sim(simulator: Simulator) -> Simulator:
    simulator.set()  # every test starts from a well-behaved server
    return simulator


def by(scores: list[Score], metric: str) -> dict[str, Score]:
    return {s.item_id: s for s in scores if s.metric == metric}


def assert_failed(score: Score, reason: str) -> None:
    assert score.status == "failed" and score.value is None and reason in (score.error or ""), score


# --- the brief's worked example, through ragas' own aggregation ------------------------------


class ScriptedJudge(LLM):
    """Replies chosen by the test per ragas prompt name, so ragas' arithmetic is checked by hand."""

    model = "scripted-judge"

    def __init__(self, replies: dict[str, Callable[[RagasRequest], dict]]):
        super().__init__()
        self.replies = replies

    async def _run(self, prompt, inputs):
        return LLMResult(prompt.output_model.model_validate(self.replies[prompt.name](inputs)), None, self.model)

    async def _chat_with_tools(self, messages, tools):
        raise NotImplementedError


@dataclass
class FixedEmbedder:
    """The question at e0; generated question i at cosine COSINES[i] from it."""

    name = "fixed"
    dim = 4
    cosines: tuple[float, ...] = (0.91, 0.74, 0.52)

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            if text.startswith("generated"):
                i = int(text.split()[-1])
                c = self.cosines[i]
                vector = [c, 0.0, 0.0, 0.0]
                vector[i + 1] = math.sqrt(1 - c * c)
            else:
                vector = [1.0, 0.0, 0.0, 0.0]
            vectors.append(vector)
        return vectors


def test_worked_example_through_ragas() -> None:
    contexts = ["c1", "c2", "c3", "c4", "c5"]
    useful = {"c1": 1, "c2": 0, "c3": 1, "c4": 0, "c5": 1}
    judge = ScriptedJudge({
        "ragas_StatementGeneratorOutput": lambda r: {"statements": ["s1", "s2", "s3", "s4"]},
        "ragas_NLIStatementOutput": lambda r: {"statements": [
            {"statement": f"s{i}", "reason": "-", "verdict": int(i < 4)} for i in range(1, 5)]},
        "ragas_AnswerRelevanceOutput": lambda r: {"question": f"generated {r.sample}", "noncommittal": 0},
        "ragas_ContextRecallOutput": lambda r: {"classifications": [
            {"statement": f"g{i}", "reason": "-", "attributed": 1} for i in range(3)]},
        "ragas_ContextPrecisionOutput": lambda r: {"reason": "-", "verdict": useful[last_input(r.prompt)["context"]]},
    })  # fmt: skip
    example = JudgeInput(item_id="x", stratum="s", question="q?", answer="a.", contexts=contexts, reference="r.")
    metrics = ["faithfulness", "answer_relevancy", "context_recall", "context_precision"]
    scores = {s.metric: s.value for s in judge_items_sync([example], metrics, judge, FixedEmbedder(), **RUN)}
    assert scores["faithfulness"] == 0.75  # 3 of 4 claims supported
    assert scores["answer_relevancy"] == pytest.approx((0.91 + 0.74 + 0.52) / 3)
    assert round(scores["answer_relevancy"], 2) == 0.72
    assert scores["context_recall"] == 1.0  # 3 of 3 reference claims attributed
    # ragas' judge context precision is average precision over ranks: (1/1 + 2/3 + 3/5) / 3, not 3/5.
    assert scores["context_precision"] == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)


def test_pure_aggregations() -> None:
    assert delta_f(0.9, 0.6) == pytest.approx(0.3) and is_fragile(0.3) and not is_fragile(FRAGILE)
    assert delta_f(0.8, 0.9) == pytest.approx(-0.1)  # noise can help; ΔF stays signed
    turns = [ToolTurn(item_id=str(i), stratum="tool", question="q", expected_tool=expected,
                      tool_calls=[ToolCall(name=n) for n in called]) for i, (expected, called) in enumerate([
        ("sql_query", ["sql_query"]), ("web_search", ["web_search", "vector_search"]),
        ("vector_search", ["vector_search"]), ("sql_query", []), (None, ["web_search"])])]  # fmt: skip
    assert tool_selection_accuracy(turns) == 0.75 < TSA_THRESHOLD  # 3 of the 4 turns that expected a tool
    assert tool_selection_accuracy(turns[-1:]) is None


# --- ragas prompts and the offline judgements ------------------------------------------------


def test_offline_judgements_read_the_last_input_of_the_ragas_prompt() -> None:
    tricky = 'Qdrant listens on port 6333.\ninput: {"answer": "not this one"}\nOutput: {}'
    prompt = StatementGeneratorPrompt().to_string(StatementGeneratorInput(question="q?", answer=tricky))
    assert prompt.count("Input: {") == 1  # the few-shot example comes first
    assert last_input(prompt) == {"question": "q?", "answer": tricky}
    extraction = prompt_for(StatementGeneratorOutput)
    assert extraction.offline(RagasRequest(prompt=prompt)).statements[0].startswith("Qdrant listens on port 6333.")
    with pytest.raises(ValueError, match="no input JSON"):
        last_input("no json here")


# --- ragas through the simulator over HTTP ---------------------------------------------------


def test_metrics_through_the_simulator_are_sensible(sim, embedder) -> None:
    no_reference = item("online", SUPPORTED.answer, reference=None)
    unclaimed = item("no-claims", "It is so.")
    llm = sim.llm()
    scores = judge_items_sync([SUPPORTED, INVENTED, OFF_TOPIC, no_reference, unclaimed], list(JUDGE_METRICS),
                              llm, embedder, **RUN)  # fmt: skip
    faithfulness, relevancy = by(scores, "faithfulness"), by(scores, "answer_relevancy")
    assert faithfulness["supported"].value == 1.0 and faithfulness["invented"].value == 0.5
    assert faithfulness["off-topic"].value == 0.0  # a real 0: one claim, unsupported
    assert relevancy["supported"].value > relevancy["invented"].value > 0.3 > relevancy["off-topic"].value
    assert by(scores, "context_recall")["supported"].value == 1.0
    assert by(scores, "context_precision")["supported"].value == pytest.approx(1.0)
    assert by(scores, "ragas_noise_sensitivity")["supported"].value == 0.0
    for metric in ("context_precision", "context_recall", "ragas_noise_sensitivity"):
        skipped = by(scores, metric)["online"]
        assert (skipped.status, skipped.value) == ("skipped", None)
        assert skipped.error == f"no reference answer: {metric} needs one"
    # ragas returns NaN when there is no claim to count: a failed score with the reason, never NaN.
    assert_failed(faithfulness["no-claims"], "no claims in the answer")
    assert all(s.judge_model == "sim-judge" and (s.status == "ok") == (s.value is not None) for s in scores)
    assert all(s.value is None or math.isfinite(s.value) for s in scores)


def test_the_simulator_started_as_a_user_would_answers_every_prompt_ragwatch_sends(embedder, tmp_path) -> None:
    """`ragwatch simulate-llm` on its own process: every judge metric, the reference RAG and golden generation."""
    port = free_port()
    ragwatch = Path(sys.executable).parent / "ragwatch"
    log = (tmp_path / "simulator.log").open("w")
    server = subprocess.Popen([str(ragwatch), "simulate-llm", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "simulator.log").read_text()
            time.sleep(0.2)
        llm = OpenAICompatibleLLM(ModelEndpoint(base_url=base_url, model="sim-judge", max_retries=0), None)
        scores = judge_items_sync([SUPPORTED, INVENTED], list(JUDGE_METRICS), llm, embedder, **RUN)
        assert len(scores) == 2 * len(JUDGE_METRICS)
        assert [s for s in scores if s.status != "ok"] == []
        assert by(scores, "faithfulness")["invented"].value == 0.5
        answer = llm.run_sync(RagAnswerPrompt(), RagInput(question=QUESTION, language="en",
                                                          contexts=[Context(chunk_id="c1", text=PORTS)]))  # fmt: skip
        assert answer.ok and "6333" in answer.value.answer
        chunk = SeedChunk(chunk_id="ops.md#ports/0-0", document="ops.md", section="Ports", language="en", text=PORTS)
        generated = llm.run_sync(ChunkQuestions(), ChunkQuestionsInput(chunk=chunk, n=1))
        assert generated.ok and generated.value.items
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()


def test_sampled_questions_differ_and_answer_an_abstention_with_zero(sim, embedder) -> None:
    two_facts = item("two", f"{SUPPORTED.answer} Snapshots are restored through the recover endpoint.")
    abstains = item("abstains", "There is not enough information in the documentation to answer this.")
    llm = sim.llm()
    before = sim.requests()
    scores = by(judge_items_sync([two_facts, abstains], ["answer_relevancy"], llm, embedder, **RUN), "answer_relevancy")
    assert sim.requests() - before == 6  # N = 3 distinct requests per answer, none collapsed into one
    assert 0 < scores["two"].value < 1
    assert (scores["abstains"].status, scores["abstains"].value) == ("ok", 0.0)  # noncommittal: ragas' deliberate 0


def test_transient_failures_are_retried_and_each_item_fails_alone(sim) -> None:
    items = [item(f"i{n}", SUPPORTED.answer) for n in range(6)]
    sim.set(fail_first_n=2)
    assert all(s.status == "ok" for s in judge_items_sync(items, ["faithfulness"], sim.llm(max_retries=2), None, **RUN))

    sim.set(fail_first_n=2)
    llm = sim.llm(max_retries=0)
    scores = judge_items_sync(items, ["faithfulness"], llm, None, **RUN)
    failed = [s for s in scores if s.status == "failed"]
    assert len(failed) == 2 and sum(s.value == 1.0 for s in scores) == 4  # one failed request sinks one item
    for score in failed:
        assert_failed(score, "judge claim extraction failed: HTTP 500 after 1 attempts")
    assert llm.counters.summary()["failures"] == 2


def test_server_errors_fail_every_item_with_the_reason(sim) -> None:
    sim.set(error_rate=1.0)
    items, metrics = [SUPPORTED, INVENTED, OFF_TOPIC], ["faithfulness", "context_recall"]
    scores = judge_items_sync(items, metrics, sim.llm(), None, **RUN)
    assert len(scores) == 6
    for score in scores:
        assert_failed(score, "HTTP 500 after 3 attempts")


def test_malformed_json_is_repaired_once_then_fails(sim) -> None:
    sim.set(malformed_rate=1.0)
    llm = sim.llm()
    [repaired] = judge_items_sync([SUPPORTED], ["faithfulness"], llm, None, **RUN)
    assert repaired.value == 1.0
    assert llm.counters.summary()["repairs"] == 2  # both ragas steps were repaired

    sim.set(malformed_rate=1.0, malformed_repairs=True)
    scores = judge_items_sync([SUPPORTED, INVENTED], ["faithfulness", "context_recall"], sim.llm(), None, **RUN)
    for score in scores:
        assert_failed(score, "invalid JSON after repair")


def test_timeouts_fail_with_the_attempts(sim) -> None:
    sim.set(timeout_rate=1.0)
    llm = sim.llm(timeout_s=0.25, max_retries=2)
    scores = judge_items_sync([SUPPORTED, INVENTED], ["faithfulness"], llm, None, **RUN)
    for score in scores:
        assert_failed(score, "judge claim extraction failed: timeout after 3 attempts (0.25 s each)")


def test_a_rerun_is_served_from_the_cache(sim, embedder, tmp_path) -> None:
    cache = LLMCache(tmp_path / "responses.sqlite")
    items, metrics = [SUPPORTED, INVENTED], ["faithfulness", "answer_relevancy", "context_precision"]
    before = sim.requests()
    first = judge_items_sync(items, metrics, sim.llm(cache), embedder, **RUN)
    sent = sim.requests() - before
    assert sent == 2 * (2 + 3 + 2)  # per item: 2 faithfulness, 3 relevancy, 1 per context for precision

    rerun_llm = sim.llm(cache)
    rerun = judge_items_sync(items, metrics, rerun_llm, embedder, **RUN)
    assert sim.requests() - before == sent  # no HTTP request at all
    assert [(s.metric, s.value) for s in rerun] == [(s.metric, s.value) for s in first]
    assert rerun_llm.counters.summary()["cache_hits"] == sent


def test_items_run_concurrently_and_report_progress(sim) -> None:
    sim.set(latency_s=0.1, capacity=64)
    seen = []
    items = [item(f"i{n}", SUPPORTED.answer) for n in range(12)]

    async def timed() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        llm = sim.llm(max_concurrency=16)
        await judge_items(items, ["faithfulness"], llm, None, progress=lambda d, t: seen.append((d, t)), **RUN)
        await llm.aclose()
        return loop.time() - started

    assert asyncio.run(timed()) < 1.0  # 12 items × 2 sequential calls × 0.1 s would take 2.4 s one by one
    assert seen[-1] == (12, 12) and len(seen) == 12


# --- noise sensitivity as ΔF -----------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    document: str
    text: str


POOL = [
    Chunk("ports#0", "ports", PORTS),
    Chunk("ports#1", "ports", "The web dashboard of Qdrant is served on the REST port under the dashboard path."),
    Chunk("snap#0", "snapshots", SNAPSHOTS),
    Chunk("billing#0", "billing", "Invoices are issued on the first day of each month. Refunds take ten working days."),
    Chunk("kafka#0", "kafka", "Kafka consumers commit offsets after processing. Rebalancing pauses every consumer."),
    Chunk("deploy#0", "deploy", "Rollbacks restore the previous release. Canary releases get five percent of traffic."),
]


def first_sentences(question: str, contexts: list[str]) -> str:
    """Fragile: repeats the first sentence of every context, noise included."""
    return " ".join(sentences(c)[0] for c in contexts)


async def best_sentence(question: str, contexts: list[str]) -> str:
    """Robust: the one sentence that shares the most words with the question."""
    words = set(question.lower().split())
    return max((s for c in contexts for s in sentences(c)), key=lambda s: len(words & set(s.lower().split())))


def noisy_item(item_id: str, answer_fn) -> JudgeInput:
    clean = [PORTS, SNAPSHOTS]
    answer = answer_fn(QUESTION, clean)
    answer = answer if isinstance(answer, str) else asyncio.run(answer)
    return JudgeInput(item_id=item_id, stratum="s", question=QUESTION, answer=answer, contexts=clean,
                      context_ids=["ports#0", "snap#0"], gold_chunk_ids=["ports#0"])  # fmt: skip


def test_noise_picks_are_seeded_and_never_gold_retrieved_or_same_document(embedder) -> None:
    pool, target = NoisePool(POOL), noisy_item("n1", first_sentences)
    random_pick = [c.chunk_id for c in pool.pick(target, "random", 2)]
    assert random_pick == [c.chunk_id for c in pool.pick(target, "random", 2)]  # seeded by the item id
    assert set(random_pick) <= {"billing#0", "kafka#0", "deploy#0"}  # other documents only
    assert [c.chunk_id for c in pool.pick(target, "hard", 1)] == ["ports#1"]  # closest to the question, not gold
    assert [c.chunk_id for c in NoisePool(POOL, embedder).pick(target, "hard", 1)] == ["ports#1"]  # by cosine
    assert len(pool.pick(target, "random", 10)) == 3
    noisy = inject(target.contexts, ["N1", "N2"], "n1")
    assert sorted(noisy) == sorted([*target.contexts, "N1", "N2"])
    assert noisy == inject(target.contexts, ["N1", "N2"], "n1")  # positions seeded by the item id too


def test_noise_delta_f_flags_a_fragile_answerer_not_a_robust_one() -> None:
    llm, pool = OfflineLLM(), NoisePool(POOL)
    fragile_items = [noisy_item(f"f{n}", first_sentences) for n in range(3)]
    robust_items = [noisy_item(f"r{n}", best_sentence) for n in range(3)]

    async def both():
        return (await noise_delta_f(fragile_items, pool, first_sentences, llm, mode="random", k=2, **RUN),
                await noise_delta_f(robust_items, pool, best_sentence, llm, mode="random", k=2, **RUN))  # fmt: skip

    fragile, robust = asyncio.run(both())
    for result in fragile:
        assert result.score.metric == "noise_delta_f" and result.f_clean == 1.0 and result.fragile
        assert result.score.value == pytest.approx(result.f_clean - result.f_noisy) and result.score.value > FRAGILE
        assert len(result.injected_ids) == 2
    for result in robust:
        assert result.score.status == "ok" and result.score.value == pytest.approx(0.0) and not result.fragile


def test_noise_failures_are_reasons_not_zeros(sim) -> None:
    pool, target = NoisePool(POOL), noisy_item("x", first_sentences)

    def broken(question, contexts):
        raise RuntimeError("target returned HTTP 502")

    results = asyncio.run(noise_delta_f([target], pool, broken, OfflineLLM(), **RUN))
    assert_failed(results[0].score, "answer from noisy contexts failed: RuntimeError: target returned HTTP 502")
    assert asyncio.run(noise_delta_f([target], pool, lambda q, c: None, OfflineLLM(), **RUN))[0].score.error == \
        "the system under test cannot answer from given contexts"  # fmt: skip

    clean_failed = Score(**RUN, item_id="x", stratum="s", metric="faithfulness", value=None, status="failed",
                         error="judge claim extraction failed: HTTP 500 after 3 attempts")  # fmt: skip
    noise = noise_delta_f([target], pool, first_sentences, OfflineLLM(), clean_scores={"x": clean_failed}, **RUN)
    results = asyncio.run(noise)
    assert_failed(results[0].score, "F(clean) not available: judge claim extraction failed: HTTP 500")

    sim.set(error_rate=1.0)
    results = asyncio.run(noise_delta_f([target], pool, first_sentences, sim.llm(max_retries=0), **RUN))
    assert_failed(results[0].score, "HTTP 500 after 1 attempts")


# --- tools -----------------------------------------------------------------------------------


def test_tool_turn_scores() -> None:
    def turn(item_id, calls, expected_tool="vector_search", expected_args=None, error=None) -> ToolTurn:
        return ToolTurn(item_id=item_id, stratum="tool", question="How does the recover endpoint work?",
                        expected_tool=expected_tool, expected_args=expected_args or {"query": "recover", "top_k": 5},
                        tool_calls=calls, error=error)  # fmt: skip

    turns = [
        turn("exact", [ToolCall(name="vector_search", arguments={"query": "recover", "top_k": 5})]),
        turn("half-args", [ToolCall(name="vector_search", arguments={"query": "recover", "top_k": 3})]),
        turn("wrong-tool", [ToolCall(name="web_search", arguments={"query": "recover"})]),
        turn("no-call", []),
        turn("failed", [], error="tool call failed: HTTP 500 after 5 attempts"),
        turn("no-expectation", [ToolCall(name="web_search")], expected_tool=None),
    ]
    scores = asyncio.run(score_tool_turns(turns, **RUN))
    tsa, accuracy = by(scores, "tool_selection_accuracy"), by(scores, "tool_call_accuracy")
    assert [tsa[i].value for i in ("exact", "half-args", "wrong-tool", "no-call")] == [1.0, 1.0, 0.0, 0.0]
    assert [accuracy[i].value for i in ("exact", "half-args", "wrong-tool", "no-call")] == [1.0, 0.5, 0.0, 0.0]
    assert_failed(tsa["failed"], "HTTP 500") and assert_failed(accuracy["failed"], "HTTP 500")
    assert tsa["no-expectation"].status == accuracy["no-expectation"].status == "skipped"
    assert tool_selection_accuracy(turns) == 0.5


def test_tool_call_validity_against_the_tool_schemas() -> None:
    valid = ToolCall(name="vector_search", arguments={"query": "snapshots", "top_k": 5})
    assert tool_call_problem(valid) is None
    assert "unknown tool 'delete_everything'" in tool_call_problem(ToolCall(name="delete_everything"))
    assert "'query' is a required property" in tool_call_problem(ToolCall(name="sql_query", arguments={}))
    assert "at top_k" in tool_call_problem(ToolCall(name="vector_search", arguments={"query": "x", "top_k": "5"}))
    assert "at top_k" in tool_call_problem(ToolCall(name="vector_search", arguments={"query": "x", "top_k": 500}))
    extra = ToolCall(name="web_search", arguments={"query": "x", "lang": "es"})
    assert "Additional properties" in tool_call_problem(extra)

    mixed = tool_call_validity([valid, ToolCall(name="sql_query", arguments={"query": 1})])
    assert (mixed.value, mixed.status) == (0.5, "ok") and "sql_query: invalid arguments at query" in mixed.error
    assert (tool_call_validity([valid]).value, tool_call_validity([valid]).error) == (1.0, None)
    none = tool_call_validity([])
    assert (none.status, none.value) == ("skipped", None)
    score = none.score(item_id="trace-1", stratum="app/es", metric="tool_call_validity", **{**RUN, "suite": "online"})
    assert score.status == "skipped" and score.error == "no tool calls in the trace"
