"""Judge metrics, ragwatch's consolidated prompts and ragas' metrics on our model layer: the brief's
worked example and parity on the same scripted verdicts, replies checked against what was asked,
abstentions, the simulator over HTTP with injected faults, the cache, noise sensitivity as ΔF, and
the tool metrics."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from ragas.metrics.collections.faithfulness.util import (
    StatementGeneratorInput,
    StatementGeneratorOutput,
    StatementGeneratorPrompt,
)

from pipelines.core.records import Score
from pipelines.core.text import abstains
from pipelines.evaluation.metrics.judge import JudgeInput, judge_items_sync
from pipelines.models.llm import LLM, LLMResult, OfflineLLM
from pipelines.models.ragas_adapter import RagasRequest, last_input, prompt_for
from tests.support.judged_items import RUN, assert_failed, by, item

# --- one scripted judge for both implementations --------------------------------------------------


@dataclass
class Script:
    """What a judge thinks, given to both implementations alike: the claims of each text, which
    single texts support which claims, which contexts are useful, and the questions it writes back.
    A claim is supported by the contexts taken together when one of them supports it."""

    claims: dict[str, list[str]]
    supports: set[tuple[str, str]]
    """(claim, text): the text (a context or the reference) supports the claim."""
    useful: dict[str, int] = field(default_factory=dict)
    questions: tuple[str, ...] = ("generated 0", "generated 1", "generated 2")
    noncommittal: tuple[int, ...] = (0, 0, 0)

    def supported(self, claim: str, evidence: str) -> int:
        return int(any(text in evidence for c, text in self.supports if c == claim))


class ScriptedJudge(LLM):
    """Answers every ragas prompt and every ragwatch judge prompt from one Script; `tamper` may
    rewrite a reply (by prompt name) to test what the judge does with replies that do not fit the
    request."""

    model = "scripted-judge"

    def __init__(self, script: Script, tamper: dict[str, Callable[[dict], dict]] | None = None):
        super().__init__()
        self.script, self.tamper = script, tamper or {}
        self.sent: Counter[str] = Counter()

    async def _run(self, prompt, inputs):
        self.sent[prompt.name] += 1
        reply = self._reply(prompt.name, inputs)
        reply = self.tamper.get(prompt.name, lambda r: r)(reply)
        return LLMResult(prompt.output_model.model_validate(reply), None, self.model)

    async def _run_samples(self, prompt, inputs, n):
        self.sent[prompt.name] += 1
        replies = [
            {"question": q, "noncommittal": c}
            for q, c in zip(self.script.questions, self.script.noncommittal)
        ]
        replies = self.tamper.get(prompt.name, lambda r: r)(replies[:n])
        return LLMResult([prompt.output_model.model_validate(r) for r in replies], None, self.model)

    def _reply(self, name: str, inputs) -> dict:
        script, supported = self.script, self.script.supported
        if name.startswith("ragas_"):
            payload = last_input(inputs.prompt)
            context = payload.get("context", "")
            if name == "ragas_StatementGeneratorOutput":
                return {"statements": script.claims[payload.get("answer", payload.get("text"))]}
            if name in ("ragas_NLIStatementOutput", "ragas_StatementFaithfulnessOutput"):
                return {
                    "statements": [
                        {"statement": c, "reason": "-", "verdict": supported(c, context)}
                        for c in payload["statements"]
                    ]
                }
            if name == "ragas_AnswerRelevanceOutput":
                return {
                    "question": script.questions[inputs.sample],
                    "noncommittal": script.noncommittal[inputs.sample],
                }
            if name == "ragas_ContextPrecisionOutput":
                return {"reason": "-", "verdict": script.useful[context]}
            if name == "ragas_ContextRecallOutput":
                return {
                    "classifications": [
                        {"statement": c, "reason": "-", "attributed": supported(c, context)}
                        for c in script.claims[payload["answer"]]
                    ]
                }
        together = "\n".join(getattr(inputs, "contexts", []))
        if name == "judge_claims":
            return {
                "texts": [
                    {"text": n, "claims": script.claims[t]} for n, t in enumerate(inputs.texts, 1)
                ]
            }
        if name == "judge_verification":

            def verdicts(claims):
                return [
                    {"claim": n, "reason": "-", "verdict": supported(c, together)}
                    for n, c in enumerate(claims, 1)
                ]

            contexts = (
                [
                    {"context": n, "reason": "-", "verdict": script.useful[c]}
                    for n, c in enumerate(inputs.contexts, 1)
                ]
                if inputs.judge_contexts
                else []
            )
            return {
                "answer_claims": verdicts(inputs.answer_claims),
                "reference_claims": verdicts(inputs.reference_claims),
                "contexts": contexts,
            }
        if name == "judge_claim_sources":

            def sources(claim):
                return [n for n, c in enumerate(inputs.contexts, 1) if supported(claim, c)]

            return {
                "reference_claims": [
                    {"claim": n, "contexts": sources(c)}
                    for n, c in enumerate(inputs.reference_claims, 1)
                ],
                "answer_claims": [
                    {
                        "claim": n,
                        "reason": "-",
                        "by_reference": supported(c, inputs.reference),
                        "contexts": sources(c),
                    }
                    for n, c in enumerate(inputs.answer_claims, 1)
                ],
            }
        raise AssertionError(f"unexpected prompt {name}")

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


IMPLEMENTATIONS = ("ragwatch", "ragas")
WORKED = Script(
    claims={"a.": ["s1", "s2", "s3", "s4"], "r.": ["g1", "g2", "g3"]},
    supports={("s1", "c1"), ("s2", "c3"), ("s3", "c5"), *((g, "c1") for g in ("g1", "g2", "g3"))},
    useful={"c1": 1, "c2": 0, "c3": 1, "c4": 0, "c5": 1},
)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_worked_example(implementation) -> None:
    """The brief's test vector, on both implementations."""
    example = JudgeInput(
        item_id="x",
        stratum="s",
        question="q?",
        answer="a.",
        contexts=["c1", "c2", "c3", "c4", "c5"],
        reference="r.",
    )
    metrics = [
        "faithfulness",
        "answer_relevancy",
        "context_recall",
        "context_precision",
        "context_precision_share",
    ]
    scores = {
        s.metric: s.value
        for s in judge_items_sync(
            [example],
            metrics,
            ScriptedJudge(WORKED),
            FixedEmbedder(),
            implementation=implementation,
            **RUN,
        )
    }
    assert scores["faithfulness"] == 0.75  # 3 of 4 claims supported
    assert scores["answer_relevancy"] == pytest.approx((0.91 + 0.74 + 0.52) / 3)
    assert round(scores["answer_relevancy"], 2) == 0.72
    assert scores["context_recall"] == 1.0  # 3 of 3 reference claims attributed
    # ragas' judge context precision is average precision over ranks: (1/1 + 2/3 + 3/5) / 3, not
    # 3/5.
    assert scores["context_precision"] == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    assert (
        scores["context_precision_share"] == 0.60
    )  # 3 of the 5 chunks given are useful: the brief's figure


def random_script(rng: random.Random) -> tuple[Script, JudgeInput, FixedEmbedder]:
    contexts = [f"context {n}" for n in range(rng.randint(1, 5))]
    answer, reference = (
        [f"a{n}" for n in range(rng.randint(1, 5))],
        [f"g{n}" for n in range(rng.randint(1, 4))],
    )
    texts = [*contexts, "the reference"]
    supports = {
        (claim, text) for claim in answer + reference for text in texts if rng.random() < 0.4
    }
    noncommittal = rng.choice([(0, 0, 0), (1, 0, 1), (1, 1, 1)])
    script = Script(
        claims={"the answer": answer, "the reference": reference},
        supports=supports,
        useful={c: rng.randint(0, 1) for c in contexts},
        noncommittal=noncommittal,
    )
    item = JudgeInput(
        item_id="x",
        stratum="s",
        question="q?",
        answer="the answer",
        contexts=contexts,
        reference="the reference",
    )
    return script, item, FixedEmbedder(tuple(rng.uniform(-0.5, 1.0) for _ in range(3)))


PARITY_METRICS = [
    "faithfulness",
    "answer_relevancy",
    "context_precision",
    "context_precision_share",
    "context_recall",
    "ragas_noise_sensitivity",
]


@pytest.mark.parametrize("seed", range(40))
def test_parity_with_ragas_on_the_same_scripted_verdicts(seed) -> None:
    """Every consolidated metric keeps ragas' definition: ragas' own metric classes and ragwatch's
    prompts, given the same judge opinions, give the same scores (to float precision)."""
    script, example, embedder = random_script(random.Random(seed))
    scores = {}
    for implementation in IMPLEMENTATIONS:
        judged = judge_items_sync(
            [example],
            PARITY_METRICS,
            ScriptedJudge(script),
            embedder,
            implementation=implementation,
            **RUN,
        )
        scores[implementation] = {s.metric: (s.status, s.value) for s in judged}
    assert all(status == "ok" for status, _ in scores["ragas"].values()), scores["ragas"]
    for metric in PARITY_METRICS:
        (ours_status, ours), (_, theirs) = scores["ragwatch"][metric], scores["ragas"][metric]
        assert ours_status == "ok" and ours == pytest.approx(theirs, abs=1e-12), (metric, scores)


def test_ragwatch_sends_three_requests_per_item_where_ragas_sends_twelve() -> None:
    example = JudgeInput(
        item_id="x",
        stratum="s",
        question="q?",
        answer="a.",
        contexts=["c1", "c2", "c3"],
        reference="r.",
    )
    metrics = [
        "faithfulness",
        "answer_relevancy",
        "context_precision",
        "context_precision_share",
        "context_recall",
    ]
    sent = {}
    for implementation in IMPLEMENTATIONS:
        judge = ScriptedJudge(WORKED)
        judge_items_sync(
            [example], metrics, judge, FixedEmbedder(), implementation=implementation, **RUN
        )
        sent[implementation] = judge.sent
    assert sent["ragwatch"] == {
        "judge_claims": 1,
        "judge_question_back": 1,
        "judge_verification": 1,
    }
    # faithfulness, N questions, 1 per context for each context precision, recall
    assert sum(sent["ragas"].values()) == 2 + 3 + 3 + 3 + 1


# --- replies are checked, not trusted -------------------------------------------------------------

FOUR_CLAIMS = Script(
    claims={"a.": ["s1", "s2", "s3", "s4"], "r.": ["g1", "g2", "g3"]},
    supports={("s1", "c1"), ("s2", "c1"), ("g1", "c1"), ("g2", "c2"), ("s1", "r."), ("s3", "c2")},
    useful={"c1": 1, "c2": 0, "c3": 1},
)
CHECKED = JudgeInput(
    item_id="x",
    stratum="s",
    question="q?",
    answer="a.",
    contexts=["c1", "c2", "c3"],
    reference="r.",
)


def scored(metric: str, implementation: str, tamper: dict, script: Script = FOUR_CLAIMS) -> Score:
    [score] = judge_items_sync(
        [CHECKED],
        [metric],
        ScriptedJudge(script, tamper),
        FixedEmbedder(),
        implementation=implementation,
        **RUN,
    )
    return score


def first(n: int, field: str) -> Callable[[dict], dict]:
    return lambda reply: {**reply, field: reply[field][:n]}


def extra(field: str, item: dict) -> Callable[[dict], dict]:
    return lambda reply: {**reply, field: [*reply[field], item]}


def reversed_(field: str) -> Callable[[dict], dict]:
    return lambda reply: {**reply, field: reply[field][::-1]}


@pytest.mark.parametrize(
    "implementation, tamper, reason",
    [
        (
            "ragwatch",
            {"judge_verification": first(2, "answer_claims")},
            "the judge returned 2 verdicts for 4 answer claims (missing answer claim 3, 4)",
        ),
        (
            "ragas",
            {"ragas_NLIStatementOutput": first(2, "statements")},
            "the judge returned 2 verdicts for 4 claims",
        ),
        (
            "ragwatch",
            {
                "judge_verification": extra(
                    "answer_claims", {"claim": 5, "reason": "-", "verdict": 1}
                )
            },
            "the judge returned 5 verdicts for 4 answer claims (no answer claim 5 was asked about)",
        ),
        (
            "ragwatch",
            {
                "judge_verification": extra(
                    "answer_claims", {"claim": 2, "reason": "-", "verdict": 1}
                )
            },
            "answer claim 2 judged more than once",
        ),
        (
            "ragas",
            {
                "ragas_NLIStatementOutput": extra(
                    "statements", {"statement": "s5", "reason": "-", "verdict": 1}
                )
            },
            "the judge returned 5 verdicts for 4 claims",
        ),
    ],
)
def test_faithfulness_fails_when_the_verdicts_do_not_cover_the_claims(
    implementation, tamper, reason
) -> None:
    """4 claims and 2 verdicts used to score 2/2 = 1.0."""
    assert_failed(scored("faithfulness", implementation, tamper), reason)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_reordered_verdicts_still_count_each_claim_once(implementation) -> None:
    tamper = {
        "judge_verification": reversed_("answer_claims"),
        "ragas_NLIStatementOutput": reversed_("statements"),
    }
    assert (
        scored("faithfulness", implementation, tamper).value == 0.75
    )  # s1, s2, s3 of s1..s4, in any order


def test_reordered_noise_sensitivity_verdicts_are_read_by_number_or_refused() -> None:
    truth = scored("ragas_noise_sensitivity", "ragas", {}).value
    tamper = {"judge_claim_sources": reversed_("answer_claims")}
    # s2 and s3 are wrong (not in the reference) and come from relevant contexts (c1, c2): 2 of 4.
    assert scored("ragas_noise_sensitivity", "ragwatch", tamper).value == truth == 0.5
    # ragas lines verdicts up by position: reordered ones would flag the wrong claims, so the score
    # fails.
    refused = scored(
        "ragas_noise_sensitivity",
        "ragas",
        {"ragas_StatementFaithfulnessOutput": reversed_("statements")},
    )
    assert_failed(refused, "in another order than the claims")


@pytest.mark.parametrize(
    "implementation, metric, tamper, reason",
    [
        (
            "ragwatch",
            "context_recall",
            {"judge_verification": first(1, "reference_claims")},
            "the judge returned 1 verdicts for 3 reference claims (missing reference claim 2, 3)",
        ),
        (
            "ragwatch",
            "context_precision",
            {"judge_verification": first(2, "contexts")},
            "the judge returned 2 verdicts for 3 contexts (missing context 3)",
        ),
        (
            "ragwatch",
            "ragas_noise_sensitivity",
            {"judge_claim_sources": first(3, "answer_claims")},
            "missing answer claim 4",
        ),
        (
            "ragwatch",
            "ragas_noise_sensitivity",
            {
                "judge_claim_sources": lambda r: {
                    **r,
                    "reference_claims": [{"claim": 1, "contexts": [7]}, *r["reference_claims"][1:]],
                }
            },
            "the judge cited context 7 of 3 contexts",
        ),
        (
            "ragas",
            "ragas_noise_sensitivity",
            {"ragas_StatementFaithfulnessOutput": first(1, "statements")},
            "the judge returned 1 verdicts for",
        ),
        (
            "ragwatch",
            "faithfulness",
            {"judge_claims": lambda r: {"texts": []}},
            "judge claim extraction: the judge returned 0 verdicts for 1 texts (missing text 1)",
        ),
        (
            "ragas",
            "context_recall",
            {
                "ragas_ContextRecallOutput": lambda r: {
                    "classifications": [{"statement": " ", "reason": "-", "attributed": 1}]
                }
            },
            "without naming it",
        ),
    ],
)
def test_every_reference_claim_context_and_claim_source_must_be_judged(
    implementation, metric, tamper, reason
) -> None:
    assert_failed(scored(metric, implementation, tamper), reason)


@pytest.mark.parametrize(
    "implementation, tamper",
    [
        ("ragwatch", {"judge_question_back": lambda replies: replies[:1]}),
        (
            "ragwatch",
            {
                "judge_question_back": lambda replies: [
                    {**r, "question": ""} if i else r for i, r in enumerate(replies)
                ]
            },
        ),
        (
            "ragas",
            {
                "ragas_AnswerRelevanceOutput": lambda r: (
                    r if r["question"] == "generated 0" else {**r, "question": " "}
                )
            },
        ),
    ],
)
def test_answer_relevancy_fails_on_fewer_questions_than_n(implementation, tamper) -> None:
    """1 of 3 questions used to score as the mean over N = 1."""
    assert_failed(
        scored("answer_relevancy", implementation, tamper),
        "the judge generated 1 of the 3 questions asked",
    )


# --- abstentions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, question, expected",
    [
        ("There is not enough information in the documentation to answer this.", None, True),
        ("I don't know.", None, True),
        ("I'm not sure; the provided context does not say.", None, True),
        (
            "There is not enough information to say which port the REST API uses.",
            "Which port does the REST API use?",
            True,
        ),
        ("I'm not sure, but Qdrant was written in Haskell at CERN.", None, False),
        (
            "There is not enough information, but the REST API uses port 6333.",
            "Which port does the REST API use?",
            False,
        ),
        ("No hay suficiente información en la documentación para responder a esto.", None, True),
        ("No lo sé.", None, True),
        ("No estoy seguro, pero Qdrant fue escrito en Haskell en el CERN.", None, False),
        (
            "No tengo suficiente información; la API REST escucha en el puerto 6333.",
            "¿En qué puerto escucha la API REST?",
            False,
        ),
        ("Qdrant listens on port 6333.", None, False),
    ],
)
def test_an_abstention_asserts_nothing_else(answer, question, expected) -> None:
    assert abstains(answer, question) is expected


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_hedged_claim_is_judged_and_only_a_real_abstention_skipped(implementation) -> None:
    hedged = item("hedged", "I'm not sure, but Qdrant was written in Haskell at CERN.")
    hedged_es = item("hedged-es", "No estoy seguro, pero Qdrant fue escrito en Haskell en el CERN.")
    real = item("real", "No hay suficiente información en la documentación para responder a esto.")
    scores = by(
        judge_items_sync(
            [hedged, hedged_es, real],
            ["faithfulness"],
            OfflineLLM(),
            None,
            implementation=implementation,
            **RUN,
        ),
        "faithfulness",
    )
    assert (scores["hedged"].status, scores["hedged"].value) == (
        "ok",
        0.0,
    )  # the invented claim counts
    assert (scores["hedged-es"].status, scores["hedged-es"].value) == ("ok", 0.0)
    assert scores["real"].status == "skipped" and "abstains" in scores["real"].error


# --- ragas prompts and the offline judgements ------------------------------------------------


def test_offline_judgements_read_the_last_input_of_the_ragas_prompt() -> None:
    tricky = 'Qdrant listens on port 6333.\ninput: {"answer": "not this one"}\nOutput: {}'
    prompt = StatementGeneratorPrompt().to_string(
        StatementGeneratorInput(question="q?", answer=tricky)
    )
    assert prompt.count("Input: {") == 1  # the few-shot example comes first
    assert last_input(prompt) == {"question": "q?", "answer": tricky}
    extraction = prompt_for(StatementGeneratorOutput)
    assert (
        extraction.offline(RagasRequest(prompt=prompt))
        .statements[0]
        .startswith("Qdrant listens on port 6333.")
    )
    with pytest.raises(ValueError, match="no input JSON"):
        last_input("no json here")
