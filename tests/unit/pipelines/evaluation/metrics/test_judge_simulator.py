"""The judge metrics against the simulator over HTTP (retries, failures, the cache), claims
extracted once, noise sensitivity as ΔF, and answer correctness.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from pipelines.cli.prompt_catalog import all_prompts
from pipelines.core.records import GoldenItem, Score, ToolCall
from pipelines.core.settings import ModelEndpoint
from pipelines.core.text import sentences
from pipelines.evaluation.metrics.correctness import (
    AnswerCorrectnessPrompt,
    CorrectnessInput,
    correctness_input,
    correctness_score,
)
from pipelines.evaluation.metrics.judge import (
    JUDGE_METRICS,
    JudgeInput,
    judge_items,
    judge_items_sync,
)
from pipelines.evaluation.metrics.judge_prompts import QuestionsBack, QuestionsInput
from pipelines.evaluation.metrics.noise import (
    FRAGILE,
    NoisePool,
    delta_f,
    inject,
    is_fragile,
    noise_delta_f,
)
from pipelines.evaluation.metrics.tools import (
    TSA_THRESHOLD,
    ToolTurn,
    tool_selection_accuracy,
)
from pipelines.evaluation.runs.rag_prompt import Context, RagAnswerPrompt, RagInput
from pipelines.evaluation.statistics.gate.gated_metrics import GATED_METRICS
from pipelines.evaluation.statistics.gate.rule import regression_gate
from pipelines.golden.prompts import ChunkQuestions, ChunkQuestionsInput, SeedChunk
from pipelines.models.cache import LLMCache
from pipelines.models.embeddings import LocalEmbedder
from pipelines.models.llm import LLM, OfflineLLM
from pipelines.models.offline import OfflineFaults
from pipelines.models.openai_compatible import OpenAICompatibleLLM
from pipelines.models.simulator import SimulatorKnobs, running_simulator
from ragwatch_harness.bench.eval import simulator_process
from ragwatch_harness.demo.corpus import load_demo_chunks
from tests.support.judged_items import (
    PORTS,
    QUESTION,
    REFERENCE,
    RUN,
    SNAPSHOTS,
    assert_failed,
    by,
    item,
)

SUPPORTED = item("supported", "Qdrant listens on port 6333 for the REST API.")
INVENTED = item(
    "invented",
    "Qdrant listens on port 6333 for the REST API. Qdrant was written in Haskell at CERN.",
)
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
        httpx.post(
            f"{self.admin}/knobs", json=SimulatorKnobs(**knobs).model_dump()
        ).raise_for_status()

    def requests(self) -> int:
        return httpx.get(f"{self.admin}/stats").json()["requests"]

    def llm(self, cache: LLMCache | None = None, **endpoint) -> OpenAICompatibleLLM:
        fields = {
            "model": "sim-judge",
            "max_concurrency": 16,
            "timeout_s": 5.0,
            "max_retries": 2,
            **endpoint,
        }
        return OpenAICompatibleLLM(
            ModelEndpoint(base_url=self.base_url, **fields), cache, backoff_s=0.01
        )


@pytest.fixture(scope="module")
def simulator() -> Iterator[Simulator]:
    with running_simulator(prompts=all_prompts()) as base_url:
        yield Simulator(base_url)


@pytest.fixture
def sim(simulator: Simulator) -> Simulator:
    simulator.set()  # every test starts from a well-behaved server
    return simulator


# --- claims extracted once, reused ----------------------------------------------------------------


def test_claims_are_extracted_once_per_answer_and_reused_by_noise_delta_f() -> None:
    judge, pool = ScriptingCounter(), NoisePool(POOL)
    items = [noisy_item(f"r{n}", first_sentences) for n in range(3)]
    items = [i.model_copy(update={"reference": REFERENCE}) for i in items]
    metrics = ["faithfulness", "context_recall", "ragas_noise_sensitivity"]
    scores = asyncio.run(judge_items(items, metrics, judge, None, implementation="ragwatch", **RUN))
    assert all(s.status == "ok" for s in scores), scores
    # One extraction per item serves faithfulness, context recall and noise sensitivity alike.
    assert judge.sent["judge_claims"] == 3 and judge.texts == 3 * 2
    # Noise ΔF without the clean scores: F(clean) re-verifies, but only the noisy answers are
    # extracted.
    asyncio.run(noise_delta_f(items, pool, first_sentences, judge, mode="random", k=2, **RUN))
    assert judge.sent["judge_claims"] == 3 + 3 and judge.texts == 6 + 3


class ScriptingCounter(OfflineLLM):
    """The offline judge, counting requests by prompt and the texts sent for claim extraction."""

    def __init__(self):
        super().__init__()
        self.sent, self.texts = Counter(), 0

    async def _run(self, prompt, inputs):
        self.sent[prompt.name] += 1
        self.texts += len(getattr(inputs, "texts", []))
        return await super()._run(prompt, inputs)


def test_pure_aggregations() -> None:
    assert delta_f(0.9, 0.6) == pytest.approx(0.3) and is_fragile(0.3) and not is_fragile(FRAGILE)
    assert delta_f(0.8, 0.9) == pytest.approx(-0.1)  # noise can help; ΔF stays signed
    turns = [
        ToolTurn(
            item_id=str(i),
            stratum="tool",
            question="q",
            expected_tool=expected,
            tool_calls=[ToolCall(name=n) for n in called],
        )
        for i, (expected, called) in enumerate(
            [
                ("sql_query", ["sql_query"]),
                ("web_search", ["web_search", "vector_search"]),
                ("vector_search", ["vector_search"]),
                ("sql_query", []),
                (None, ["web_search"]),
            ]
        )
    ]
    assert (
        tool_selection_accuracy(turns) == 0.75 < TSA_THRESHOLD
    )  # 3 of the 4 turns that expected a tool
    assert tool_selection_accuracy(turns[-1:]) is None


# --- ragas through the simulator over HTTP ---------------------------------------------------


@pytest.mark.parametrize("implementation", ["ragwatch", "ragas"])
def test_metrics_through_the_simulator_are_sensible(sim, embedder, implementation) -> None:
    no_reference = item("online", SUPPORTED.answer, reference=None)
    unclaimed = item("no-claims", "It is so.")
    llm = sim.llm()
    scores = judge_items_sync(
        [SUPPORTED, INVENTED, OFF_TOPIC, no_reference, unclaimed],
        list(JUDGE_METRICS),
        llm,
        embedder,
        implementation=implementation,
        **RUN,
    )
    faithfulness, relevancy = by(scores, "faithfulness"), by(scores, "answer_relevancy")
    assert faithfulness["supported"].value == 1.0 and faithfulness["invented"].value == 0.5
    assert faithfulness["off-topic"].value == 0.0  # a real 0: one claim, unsupported
    assert (
        relevancy["supported"].value
        > relevancy["invented"].value
        > 0.3
        > relevancy["off-topic"].value
    )
    assert by(scores, "context_recall")["supported"].value == 1.0
    assert by(scores, "context_precision")["supported"].value == pytest.approx(1.0)
    assert by(scores, "ragas_noise_sensitivity")["supported"].value == 0.0
    for metric in ("context_precision", "context_recall", "ragas_noise_sensitivity"):
        skipped = by(scores, metric)["online"]
        assert (skipped.status, skipped.value) == ("skipped", None)
        assert skipped.error == f"no reference answer: {metric} needs one"
    # ragas returns NaN when there is no claim to count: a failed score with the reason, never NaN.
    assert_failed(faithfulness["no-claims"], "no claims in the answer")
    assert all(
        s.judge_model == "sim-judge" and (s.status == "ok") == (s.value is not None) for s in scores
    )
    assert all(s.value is None or math.isfinite(s.value) for s in scores)


def test_the_simulator_started_as_a_user_would_answers_every_prompt_ragwatch_sends(
    embedder,
) -> None:
    """`ragwatch simulate-llm` on its own process: every judge metric, the reference RAG and golden
    generation."""
    ragwatch = Path(sys.executable).parent / "ragwatch"
    with simulator_process(SimulatorKnobs(), program=[str(ragwatch)]) as base_url:
        llm = OpenAICompatibleLLM(
            ModelEndpoint(base_url=base_url, model="sim-judge", max_retries=0), None
        )
        scores = judge_items_sync([SUPPORTED, INVENTED], list(JUDGE_METRICS), llm, embedder, **RUN)
        assert len(scores) == 2 * len(JUDGE_METRICS)
        assert [s for s in scores if s.status != "ok"] == []
        assert by(scores, "faithfulness")["invented"].value == 0.5
        answer = llm.run_sync(
            RagAnswerPrompt(),
            RagInput(
                question=QUESTION, language="en", contexts=[Context(chunk_id="c1", text=PORTS)]
            ),
        )
        assert answer.ok and "6333" in answer.value.answer
        chunk = SeedChunk(
            chunk_id="ops.md#ports/0-0",
            document="ops.md",
            section="Ports",
            language="en",
            text=PORTS,
        )
        generated = llm.run_sync(ChunkQuestions(), ChunkQuestionsInput(chunk=chunk, n=1))
        assert generated.ok and generated.value.items


@pytest.mark.parametrize("implementation, requests_per_answer", [("ragwatch", 1), ("ragas", 3)])
def test_sampled_questions_differ_and_answer_an_abstention_with_zero(
    sim, embedder, implementation, requests_per_answer
) -> None:
    two_facts = item(
        "two", f"{SUPPORTED.answer} Snapshots are restored through the recover endpoint."
    )
    abstains = item(
        "abstains", "There is not enough information in the documentation to answer this."
    )
    llm = sim.llm()
    before = sim.requests()
    scores = by(
        judge_items_sync(
            [two_facts, abstains],
            ["answer_relevancy"],
            llm,
            embedder,
            implementation=implementation,
            **RUN,
        ),
        "answer_relevancy",
    )
    # N = 3 samples per answer: one request with n = 3 (ragwatch) or 3 distinct requests (ragas).
    assert sim.requests() - before == 2 * requests_per_answer
    assert 0 < scores["two"].value < 1
    assert (scores["abstains"].status, scores["abstains"].value) == (
        "ok",
        0.0,
    )  # noncommittal: ragas' deliberate 0
    samples = asyncio.run(
        llm.run_samples(QuestionsBack(), QuestionsInput(response=two_facts.answer), 3)
    )
    assert len({q.question for q in samples.value}) == 3  # none collapsed into one


def test_transient_failures_are_retried_and_each_item_fails_alone(sim) -> None:
    items = [item(f"i{n}", SUPPORTED.answer) for n in range(6)]
    sim.set(fail_first_n=2)
    assert all(
        s.status == "ok"
        for s in judge_items_sync(items, ["faithfulness"], sim.llm(max_retries=2), None, **RUN)
    )

    sim.set(fail_first_n=2)
    llm = sim.llm(max_retries=0)
    scores = judge_items_sync(items, ["faithfulness"], llm, None, **RUN)
    failed = [s for s in scores if s.status == "failed"]
    assert (
        len(failed) == 2 and sum(s.value == 1.0 for s in scores) == 4
    )  # one failed request sinks one item
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
    scores = judge_items_sync(
        [SUPPORTED, INVENTED], ["faithfulness", "context_recall"], sim.llm(), None, **RUN
    )
    for score in scores:
        assert_failed(score, "invalid JSON after repair")


def test_timeouts_fail_with_the_attempts(sim) -> None:
    sim.set(timeout_rate=1.0)
    llm = sim.llm(timeout_s=0.25, max_retries=2)
    scores = judge_items_sync([SUPPORTED, INVENTED], ["faithfulness"], llm, None, **RUN)
    for score in scores:
        assert_failed(
            score, "judge claim extraction failed: timeout after 3 attempts (0.25 s each)"
        )


@pytest.mark.parametrize(
    "implementation, per_item",
    [
        ("ragwatch", 3),  # claim extraction, the N questions (n = 3), one verification
        ("ragas", 2 + 3 + 2),  # 2 faithfulness, 3 relevancy, 1 per context for precision
    ],
)
def test_a_rerun_is_served_from_the_cache(
    sim, embedder, tmp_path, implementation, per_item
) -> None:
    cache = LLMCache(tmp_path / "responses.sqlite")
    items, metrics = (
        [SUPPORTED, INVENTED],
        ["faithfulness", "answer_relevancy", "context_precision"],
    )
    before = sim.requests()
    first_llm = sim.llm(cache)
    first = judge_items_sync(
        items, metrics, first_llm, embedder, implementation=implementation, **RUN
    )
    sent = sim.requests() - before
    # The two items ask one identical request (ragas: their context's precision): it goes out
    # twice when both are in flight at once, else the second is already in the cache.
    assert sent + first_llm.counters.summary()["cache_hits"] == 2 * per_item

    rerun_llm = sim.llm(cache)
    rerun = judge_items_sync(
        items, metrics, rerun_llm, embedder, implementation=implementation, **RUN
    )
    assert sim.requests() - before == sent  # no HTTP request at all
    assert [(s.metric, s.value) for s in rerun] == [(s.metric, s.value) for s in first]
    assert rerun_llm.counters.summary()["cache_hits"] == 2 * per_item


def test_a_rerun_in_another_order_is_served_from_the_cache(sim, tmp_path) -> None:
    """Claims remembered from an earlier item (the shared reference) must not change the request: a
    rerun that judges the items in another order would miss the cache."""
    cache, metrics = LLMCache(tmp_path / "responses.sqlite"), ["faithfulness", "context_recall"]
    first = sim.llm(cache)
    for one in (
        SUPPORTED,
        INVENTED,
    ):  # one by one: INVENTED's turn comes with the reference's claims known
        judge_items_sync([one], metrics, first, None, implementation="ragwatch", **RUN)
    before = sim.requests()
    rerun = judge_items_sync(
        [INVENTED, SUPPORTED], metrics, sim.llm(cache), None, implementation="ragwatch", **RUN
    )
    assert sim.requests() == before and all(s.status == "ok" for s in rerun)


def test_items_run_concurrently_and_report_progress() -> None:
    seen = []
    items = [item(f"i{n}", SUPPORTED.answer) for n in range(12)]
    # A fresh simulator, so its peak of requests in flight is this test's: one by one it would be 1.
    # (Peak, not wall time: on a loaded 2-core machine the clock says more about the neighbours.)
    with running_simulator(
        SimulatorKnobs(latency_s=1.0, capacity=64), prompts=all_prompts()
    ) as base_url:
        llm = Simulator(base_url).llm(max_concurrency=16)
        judge_items_sync(
            items, ["faithfulness"], llm, None, progress=lambda d, t: seen.append((d, t)), **RUN
        )
        peak = httpx.get(base_url.removesuffix("/v1") + "/admin/stats").json()["max_concurrent"]
    assert peak == 12  # every item's first request at once
    assert seen[-1] == (12, 12) and len(seen) == 12


# --- noise sensitivity as ΔF -----------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    document: str
    text: str


POOL = [
    Chunk("ports#0", "ports", PORTS),
    Chunk(
        "ports#1",
        "ports",
        "The web dashboard of Qdrant is served on the REST port under the dashboard path.",
    ),
    Chunk("snap#0", "snapshots", SNAPSHOTS),
    Chunk(
        "billing#0",
        "billing",
        "Invoices are issued on the first day of each month. Refunds take ten working days.",
    ),
    Chunk(
        "kafka#0",
        "kafka",
        "Kafka consumers commit offsets after processing. Rebalancing pauses every consumer.",
    ),
    Chunk(
        "deploy#0",
        "deploy",
        "Rollbacks restore the previous release. Canary releases get five percent of traffic.",
    ),
]


def first_sentences(question: str, contexts: list[str]) -> str:
    """Fragile: repeats the first sentence of every context, noise included."""
    return " ".join(sentences(c)[0] for c in contexts)


async def best_sentence(question: str, contexts: list[str]) -> str:
    """Robust: the one sentence that shares the most words with the question."""
    words = set(question.lower().split())
    return max(
        (s for c in contexts for s in sentences(c)),
        key=lambda s: len(words & set(s.lower().split())),
    )


def noisy_item(item_id: str, answer_fn) -> JudgeInput:
    clean = [PORTS, SNAPSHOTS]
    answer = answer_fn(QUESTION, clean)
    answer = answer if isinstance(answer, str) else asyncio.run(answer)
    return JudgeInput(
        item_id=item_id,
        stratum="s",
        question=QUESTION,
        answer=answer,
        contexts=clean,
        context_ids=["ports#0", "snap#0"],
        gold_chunk_ids=["ports#0"],
    )


def test_noise_picks_are_seeded_and_never_gold_retrieved_or_same_document(embedder) -> None:
    pool, target = NoisePool(POOL), noisy_item("n1", first_sentences)
    random_pick = [c.chunk_id for c in pool.pick(target, "random", 2)]
    assert random_pick == [
        c.chunk_id for c in pool.pick(target, "random", 2)
    ]  # seeded by the item id
    assert set(random_pick) <= {"billing#0", "kafka#0", "deploy#0"}  # other documents only
    # ports#1 is the closest to the question, but it is the gold chunk's own document: it holds part
    # of the answer ("the REST port"), so it is no noise. Hard negatives come from other documents
    # only.
    hard = [c.chunk_id for c in pool.pick(target, "hard", 5)]
    assert "ports#1" not in hard and {c.split("#")[0] for c in hard} <= {
        "billing",
        "kafka",
        "deploy",
        "snapshots",
    }
    by_cosine = [c.chunk_id for c in NoisePool(POOL, embedder).pick(target, "hard", 5)]
    assert "ports#1" not in by_cosine and sorted(by_cosine) == sorted(hard)
    # The retrieved snapshots chunk is excluded by id; its document may still give hard noise when
    # gold is known (only the gold documents hold the answer). Online, with no gold, every retrieved
    # document is out.
    online = target.model_copy(update={"gold_chunk_ids": []})
    assert {c.split("#")[0] for c in (x.chunk_id for x in pool.pick(online, "hard", 5))} <= {
        "billing",
        "kafka",
        "deploy",
    }
    assert len(pool.pick(target, "random", 10)) == 3
    noisy = inject(target.contexts, ["N1", "N2"], "n1")
    assert sorted(noisy) == sorted([*target.contexts, "N1", "N2"])
    assert noisy == inject(
        target.contexts, ["N1", "N2"], "n1"
    )  # positions seeded by the item id too


def test_noise_delta_f_flags_a_fragile_answerer_not_a_robust_one() -> None:
    llm, pool = OfflineLLM(), NoisePool(POOL)
    fragile_items = [noisy_item(f"f{n}", first_sentences) for n in range(3)]
    robust_items = [noisy_item(f"r{n}", best_sentence) for n in range(3)]

    async def both():
        return (
            await noise_delta_f(
                fragile_items, pool, first_sentences, llm, mode="random", k=2, **RUN
            ),
            await noise_delta_f(robust_items, pool, best_sentence, llm, mode="random", k=2, **RUN),
        )

    fragile, robust = asyncio.run(both())
    for result in fragile:
        assert result.score.metric == "noise_delta_f" and result.f_clean == 1.0 and result.fragile
        assert (
            result.score.value == pytest.approx(result.f_clean - result.f_noisy)
            and result.score.value > FRAGILE
        )
        assert len(result.injected_ids) == 2
    for result in robust:
        assert (
            result.score.status == "ok"
            and result.score.value == pytest.approx(0.0)
            and not result.fragile
        )


def test_noise_failures_are_reasons_not_zeros(sim) -> None:
    pool, target = NoisePool(POOL), noisy_item("x", first_sentences)

    def broken(question, contexts):
        raise RuntimeError("target returned HTTP 502")

    results = asyncio.run(noise_delta_f([target], pool, broken, OfflineLLM(), **RUN))
    assert_failed(
        results[0].score,
        "answer from noisy contexts failed: RuntimeError: target returned HTTP 502",
    )
    assert (
        asyncio.run(noise_delta_f([target], pool, lambda q, c: None, OfflineLLM(), **RUN))[
            0
        ].score.error
        == "the system under test cannot answer from given contexts"
    )

    clean_failed = Score(
        **RUN,
        item_id="x",
        stratum="s",
        metric="faithfulness",
        value=None,
        status="failed",
        error="judge claim extraction failed: HTTP 500 after 3 attempts",
    )
    noise = noise_delta_f(
        [target], pool, first_sentences, OfflineLLM(), clean_scores={"x": clean_failed}, **RUN
    )
    results = asyncio.run(noise)
    assert_failed(
        results[0].score, "F(clean) not available: judge claim extraction failed: HTTP 500"
    )

    sim.set(error_rate=1.0)
    results = asyncio.run(
        noise_delta_f([target], pool, first_sentences, sim.llm(max_retries=0), **RUN)
    )
    assert_failed(results[0].score, "HTTP 500 after 1 attempts")


# --- answer correctness ---------------------------------------------------------------------------


def response_row(
    item_id: str,
    answer: str,
    reference: str,
    *,
    qtype: str = "single_hop",
    question: str = QUESTION,
) -> dict:
    golden = GoldenItem(
        item_id=item_id,
        question=question,
        reference_answer=reference,
        qtype=qtype,
        language="en",
        source="corpus",
        source_ref=item_id,
        generator_model="m",
        corpus_version="c",
        created_at="2026-11-30",
    )
    return {"item": golden.model_dump(mode="json"), "answer": answer, "contexts": [], "error": None}


def correctness_scores(rows: list[dict], judge: LLM) -> list[Score]:
    """What a judge batch stores: one `answer_correctness` score per answered row."""
    requests = [correctness_input(row) for row in rows]
    graded = [g for g in requests if isinstance(g, CorrectnessInput)]
    verdicts = iter(judge.run_many_sync(AnswerCorrectnessPrompt(), graded))
    return [
        correctness_score(
            row["item"]["item_id"],
            "single_hop/en",
            g,
            next(verdicts) if isinstance(g, CorrectnessInput) else None,
            **RUN,
        )
        for row, g in zip(rows, requests)
    ]


def test_answer_correctness_is_a_0_1_score_skipped_or_failed_with_its_reason(sim) -> None:
    not_enough = "There is not enough information in the documentation to answer."
    rows = [
        response_row("right", "Qdrant listens on port 6333 for the REST API.", REFERENCE),
        response_row("swapped", "The REST API of Qdrant listens on port 6334.", REFERENCE),
        response_row("cut", "Qdrant listens on port", REFERENCE),
        # Adversarial items are graded too: making something up where the corpus has no answer is
        # wrong.
        response_row("abstains", not_enough, not_enough, qtype="adversarial"),
        response_row(
            "made-up", "Qdrant was written in Haskell at CERN.", not_enough, qtype="adversarial"
        ),
        response_row("silent", "  ", REFERENCE),
        response_row("no-reference", "Port 6333.", ""),
    ]
    scores = by(correctness_scores(rows, OfflineLLM()), "answer_correctness")
    assert {i: scores[i].value for i in ("right", "swapped", "cut", "abstains", "made-up")} == {
        "right": 1.0,
        "swapped": 0.0,
        "cut": 0.0,
        "abstains": 1.0,
        "made-up": 0.0,
    }
    assert all(scores[i].status == "ok" for i in ("right", "swapped", "cut", "abstains", "made-up"))
    assert (scores["silent"].status, scores["silent"].error) == (
        "skipped",
        "the target returned no answer to grade",
    )
    assert (
        scores["no-reference"].status == "skipped"
        and "no reference answer" in scores["no-reference"].error
    )
    sim.set(error_rate=1.0)
    failed = correctness_scores(rows[:1], sim.llm(max_retries=0))[0]
    assert_failed(failed, "correctness judge failed: HTTP 500")


def test_half_the_answers_cut_to_five_words_fail_the_gate_on_answer_correctness() -> None:
    """The reported hole: a candidate whose every other answer is cut to five words passed the gate.
    60 single-hop items made by the golden build's offline generator from demo-corpus chunks,
    answered by the reference RAG's offline generator from the gold chunk and a distractor, judged
    offline."""
    chunks = sorted(
        load_demo_chunks(), key=lambda c: hashlib.sha256(c.chunk_id.encode()).hexdigest()
    )
    rag, rows = RagAnswerPrompt(faults=OfflineFaults()), []
    for chunk, distractor in zip(chunks, reversed(chunks)):
        seed = SeedChunk(
            chunk_id=chunk.chunk_id,
            document=chunk.topic,
            section=chunk.section,
            language="en",
            text=chunk.text,
        )
        qa = next(iter(ChunkQuestions().offline(ChunkQuestionsInput(chunk=seed, n=1)).items), None)
        if qa is None:
            continue
        contexts = [Context(chunk_id=c.chunk_id, text=c.text) for c in (chunk, distractor)]
        answer = rag.offline(
            RagInput(question=qa.question, language="en", contexts=contexts)
        ).answer
        rows.append(response_row(f"item-{len(rows):02d}", answer, qa.answer, question=qa.question))
        if len(rows) == 60:
            break
    cut = [
        {**row, "answer": " ".join(row["answer"].split()[:5])} if n % 2 else row
        for n, row in enumerate(rows)
    ]
    judge = OfflineLLM()
    baseline, candidate = correctness_scores(rows, judge), correctness_scores(cut, judge)
    assert sum(s.value for s in baseline) >= 30  # most full answers state the reference's fact
    assert all(s.value == 0.0 for s in candidate[1::2])  # every answer cut to five words is wrong
    rerun = regression_gate(correctness_scores(rows, judge), baseline, ["answer_correctness"])
    assert rerun.passed
    gate = regression_gate(candidate, baseline, ["answer_correctness"])
    verdict = gate.metrics[0]
    assert not gate.passed and verdict.checks_failed == ("score_drop",), verdict.reason
    # Significant even after Holm over every gated metric of a real run.
    assert verdict.p_value * len(GATED_METRICS) <= gate.alpha and verdict.diff <= -0.2
