"""The offline backend as a flawed model at known rates, and the offline judge able to catch it.

Calibration: plant faults at a configured rate, measure with the same metric code the evals use, and
check that the measurement recovers the planted rate (within its interval, and item by item where
the truth is known exactly). A judge that could not see a fault, or a generator that did not plant
what it says, fails here.
"""

from __future__ import annotations

import asyncio

import pytest

from pipelines.core.agent_tools import TOOL_NAMES, TOOLS
from pipelines.core.text import sentences
from pipelines.evaluation.metrics.judge import JudgeInput, judge_items
from pipelines.evaluation.metrics.noise import CONTROL_METRIC, NoisePool, noise_delta_f
from pipelines.evaluation.metrics.tools import ToolTurn, score_tool_turns, tool_selection_accuracy
from pipelines.evaluation.runs.rag_prompt import Context, RagAnswerPrompt, RagInput
from pipelines.evaluation.statistics.aggregates import aggregate
from pipelines.evaluation.statistics.intervals import proportion_ci
from pipelines.golden.prompts import SeedChunk, ToolQuestion, ToolTripleInput
from pipelines.models.llm import OfflineLLM
from pipelines.models.offline import (
    OfflineFaults,
    choose_tool,
    configured_faults,
    offline_model_label,
)
from ragwatch_harness.demo.corpus import load_demo_chunks

RUN = {"run_id": "run-1", "suite": "offline", "dataset_version": "v1"}
CHUNKS = load_demo_chunks()


def questions(n: int) -> list[tuple[str, str, list[str], list[str]]]:
    """(item id, question, contexts, context ids): a chunk's first sentence asked back, its chunk
    and one unrelated chunk as the retrieved contexts."""
    out = []
    for i, chunk in enumerate(CHUNKS[::3]):
        if len(sentences(chunk.text)) < 2:
            continue
        other = CHUNKS[(i * 7 + 13) % len(CHUNKS)]
        if other.topic == chunk.topic:
            continue
        question = sentences(chunk.text)[0].rstrip(".?!") + "?"
        out.append((f"q{i}", question, [chunk.text, other.text], [chunk.chunk_id, other.chunk_id]))
        if len(out) == n:
            break
    return out


def answer(prompt: RagAnswerPrompt, question: str, contexts: list[str], sample: int = 0) -> str:
    inputs = RagInput(
        question=question,
        language="en",
        sample=sample,
        contexts=[Context(chunk_id=str(k), text=t) for k, t in enumerate(contexts, start=1)],
    )
    return prompt.offline(inputs).answer


def faithfulness_of(answers: dict[str, tuple[str, str, list[str]]]) -> dict[str, float]:
    items = [
        JudgeInput(item_id=i, stratum="s", question=q, answer=a, contexts=c)
        for i, (q, a, c) in answers.items()
    ]
    scores = asyncio.run(judge_items(items, ["faithfulness"], OfflineLLM(), None, **RUN))
    assert all(s.status == "ok" for s in scores), [s.error for s in scores if s.status != "ok"]
    return {s.item_id: s.value for s in scores}


@pytest.mark.parametrize(("made_up", "swapped"), [(0.0, 0.0), (0.15, 0.10), (0.3, 0.0)])
def test_planted_unsupported_sentences_are_recovered_by_faithfulness(made_up, swapped):
    faulty, clean = (
        RagAnswerPrompt(faults=OfflineFaults(made_up=made_up, swapped=swapped)),
        RagAnswerPrompt(faults=OfflineFaults()),
    )
    asked = questions(100)
    answers = {i: (q, answer(faulty, q, c), c) for i, q, c, _ in asked}
    measured = faithfulness_of(answers)

    # Item by item, the truth is known: the sentences that differ from the faultless answer are the
    # planted ones, and faithfulness must be exactly (kept sentences) / (all sentences).
    planted = total = 0
    for item_id, question, contexts, _ in asked:
        truth, given = sentences(answer(clean, question, contexts)), sentences(answers[item_id][1])
        assert len(truth) == len(given), (truth, given)
        wrong = sum(t != g for t, g in zip(truth, given))
        planted, total = planted + wrong, total + len(truth)
        assert measured[item_id] == pytest.approx((len(truth) - wrong) / len(truth)), given

    # Pooled: the planted rate lies in the interval of the measured faithfulness.
    [pooled] = [a for a in aggregate([*_scores(measured)]) if a.stratum == "all"]
    expected = 1.0 - (made_up + swapped)
    if expected == 1.0:
        assert pooled.mean == 1.0 and planted == 0
    else:
        assert pooled.ci_low <= expected <= pooled.ci_high, (expected, pooled)
        assert 0 < planted < total


def _scores(values: dict[str, float]):
    from pipelines.core.records import Score

    return (
        Score(**RUN, item_id=i, stratum="s", metric="faithfulness", value=v, status="ok")
        for i, v in values.items()
    )


def test_raising_a_rate_only_adds_faults():
    low, high = (
        RagAnswerPrompt(faults=OfflineFaults(made_up=0.1)),
        RagAnswerPrompt(faults=OfflineFaults(made_up=0.3)),
    )
    clean = RagAnswerPrompt(faults=OfflineFaults())
    for _, question, contexts, _ in questions(60):
        truth = sentences(answer(clean, question, contexts))
        at_low = {
            k
            for k, (t, g) in enumerate(zip(truth, sentences(answer(low, question, contexts))))
            if t != g
        }
        at_high = {
            k
            for k, (t, g) in enumerate(zip(truth, sentences(answer(high, question, contexts))))
            if t != g
        }
        assert at_low <= at_high
    # The same request gets the same answer; another sample of it is an independent draw.
    q, c = questions(1)[0][1:3]
    assert answer(high, q, c) == answer(high, q, c)
    assert (
        len(
            {
                answer(RagAnswerPrompt(faults=OfflineFaults(made_up=0.5)), q, c, sample=s)
                for s in range(8)
            }
        )
        > 1
    )


COUNTING = "How many tickets mention {}?"
NEWS = "What is the latest news about {}?"
DOCS = "How does {} work?"


def test_planted_wrong_tool_rate_is_recovered_by_tsa():
    topics = sorted({c.topic for c in CHUNKS})
    asked = [
        template.format(f"{topic} ({n})")
        for n in range(20)
        for topic in topics
        for template in (COUNTING, NEWS, DOCS)
    ]
    asked = asked[:300]
    planted_rate = 0.2

    def turns(faults: OfflineFaults) -> list[ToolTurn]:
        expected = [
            choose_tool([{"role": "user", "content": q}], TOOLS, OfflineFaults())[0].name
            for q in asked
        ]
        return [
            ToolTurn(
                item_id=str(i),
                stratum="tool",
                question=q,
                expected_tool=e,
                tool_calls=choose_tool([{"role": "user", "content": q}], TOOLS, faults),
            )
            for i, (q, e) in enumerate(zip(asked, expected))
        ]

    assert tool_selection_accuracy(turns(OfflineFaults())) == 1.0
    faulty = turns(OfflineFaults(wrong_tool=planted_rate))
    tsa = tool_selection_accuracy(faulty)
    wrong = sum(t.tool_calls[0].name != t.expected_tool for t in faulty)
    assert tsa == pytest.approx(1 - wrong / len(faulty))
    low, high = proportion_ci(len(faulty) - wrong, len(faulty))
    assert low <= 1 - planted_rate <= high, (tsa, low, high)


def test_planted_wrong_arguments_rate_is_recovered_by_tool_call_accuracy():
    """The golden generator's tool triples, called by the offline agent: every argument right
    without faults (the demo's 0.000 came from an agent that passed the whole question as the
    query), and with `wrong_arguments` the score drops on those turns only, each saying which
    argument differs."""
    triples = {}
    for chunk in CHUNKS[:120]:
        seed = SeedChunk(
            chunk_id=chunk.chunk_id,
            document=chunk.topic,
            section=chunk.section,
            language="en",
            text=chunk.text,
        )
        for tool in TOOL_NAMES:
            triple = ToolQuestion().offline(ToolTripleInput(chunk=seed, tool=tool))
            triples.setdefault(triple.question, triple)
    assert len(triples) >= 150

    def scored(faults: OfflineFaults) -> dict[str, tuple[float, str | None]]:
        turns = [
            ToolTurn(
                item_id=str(i),
                stratum="tool/en",
                question=t.question,
                expected_tool=t.expected_tool,
                expected_args=t.expected_args,
                tool_calls=choose_tool([{"role": "user", "content": t.question}], TOOLS, faults),
            )
            for i, t in enumerate(triples.values())
        ]
        scores = asyncio.run(score_tool_turns(turns, **RUN))
        return {s.item_id: (s.value, s.error) for s in scores if s.metric == "tool_call_accuracy"}

    clean = scored(OfflineFaults())
    assert all(value == 1.0 and note is None for value, note in clean.values())
    planted = 0.2
    faulty = scored(OfflineFaults(wrong_arguments=planted))
    wrong = [note for value, note in faulty.values() if value == 0.0]
    assert all(value in (0.0, 1.0) for value, _ in faulty.values())
    assert wrong and all(note.startswith("query: expected ") and ", got " in note for note in wrong)
    low, high = proportion_ci(len(faulty) - len(wrong), len(faulty))
    assert low <= 1 - planted <= high, (len(wrong), len(faulty), low, high)
    # A wrong tool is named as such, whatever its arguments.
    other = scored(OfflineFaults(wrong_tool=1.0))
    assert all(
        v == 0.0 and note.startswith("called ") and "; expected " in note
        for v, note in other.values()
    )


def test_noise_susceptibility_shows_in_delta_f_and_the_control_does_not():
    """ΔF of a distractible generator is positive; its no-noise control (the same arm twice) is not;
    a generator with random sentence faults but no susceptibility has a ΔF no larger than its
    control."""
    asked = questions(40)
    pool = NoisePool([_Chunk(c.chunk_id, c.chunk_id.split("#")[0], c.text) for c in CHUNKS[1::5]])

    def run(faults: OfflineFaults):
        prompt = RagAnswerPrompt(faults=faults)
        items = [
            JudgeInput(
                item_id=i,
                stratum="s",
                question=q,
                answer=answer(prompt, q, c),
                contexts=c,
                context_ids=ids,
            )
            for i, q, c, ids in asked
        ]
        fn = {q: c for _, q, c, _ in asked}
        results = asyncio.run(
            noise_delta_f(
                items,
                pool,
                lambda q, ctx: answer(prompt, q, ctx, sample=1),
                OfflineLLM(),
                mode="random",
                k=2,
                control=True,
                **RUN,
            )
        )
        assert fn and all(
            r.control is not None and r.control.metric == CONTROL_METRIC for r in results
        )
        delta = [r.score.value for r in results if r.score.status == "ok"]
        control = [r.control.value for r in results if r.control.status == "ok"]
        assert len(delta) >= 30 and len(control) >= 30
        return sum(delta) / len(delta), sum(control) / len(control)

    distracted, control = run(OfflineFaults(noise_susceptibility=1.0))
    assert control == 0.0 and distracted > 0.15
    sloppy, sloppy_control = run(OfflineFaults(made_up=0.3))
    assert (
        sloppy_control != 0.0
    )  # independent draws differ: that spread is what the control measures
    assert abs(sloppy - sloppy_control) < 0.15


class _Chunk:
    def __init__(self, chunk_id: str, document: str, text: str):
        self.chunk_id, self.document, self.text = chunk_id, document, text


def test_fault_rates_come_from_the_environment_and_are_named_in_reports(monkeypatch):
    monkeypatch.setenv("RAGWATCH_OFFLINE_FAULTS__MADE_UP", "0.1")
    monkeypatch.setenv("RAGWATCH_OFFLINE_FAULTS__WRONG_TOOL", "0.2")
    assert configured_faults() == OfflineFaults(made_up=0.1, wrong_tool=0.2)
    assert (
        offline_model_label()
        == "ragwatch-offline-deterministic (faults: made_up=0.1, wrong_tool=0.2)"
    )
    monkeypatch.setenv("RAGWATCH_OFFLINE_FAULTS__SWAPPED", "0.95")
    with pytest.raises(ValueError, match="made_up \\+ swapped"):
        configured_faults()
    monkeypatch.setenv("RAGWATCH_OFFLINE_FAULTS__SWAPPED", "2")
    with pytest.raises(ValueError, match="RAGWATCH_OFFLINE_FAULTS__SWAPPED"):
        configured_faults()


@pytest.mark.parametrize(
    ("answer_text", "correct"),
    [
        (
            "Qdrant listens on port 6333 for the REST API.",
            True,
        ),  # the reference's claim, reworded order
        ("The REST API of Qdrant listens on port 6334.", False),  # a swapped number
        ("There is not enough information in the provided contexts.", False),  # a wrong abstention
        (
            "Snapshots are written to the snapshots directory.",
            False,
        ),  # true, but another question's answer
    ],
)
def test_the_offline_correctness_judge_grades_against_the_reference(answer_text, correct):
    from pipelines.evaluation.metrics.correctness import AnswerCorrectnessPrompt, CorrectnessInput

    verdict = AnswerCorrectnessPrompt().offline(
        CorrectnessInput(
            question="Which port does the Qdrant REST API listen on?",
            answer=answer_text,
            reference="The Qdrant REST API listens on port 6333.",
        )
    )
    assert verdict.correct is correct, verdict.reason
    abstain = AnswerCorrectnessPrompt().offline(
        CorrectnessInput(
            question="Who wrote Qdrant in Haskell?",
            answer="There is not enough information to answer.",
            reference="There is not enough information: the corpus does not say.",
        )
    )
    assert abstain.correct, abstain.reason
