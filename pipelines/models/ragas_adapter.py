"""ragas metrics on our model layer: each ragas request becomes one call of our `LLM`.

ragas' collections metrics (`ragas.metrics.collections`) ask an `InstructorBaseRagasLLM` for
`agenerate(prompt, response_model)` and a `BaseRagasEmbedding` for vectors. `RagasLLM` turns each
request into a `Prompt` named after the response model (`ragas_<ModelName>`): the prompt is the
user message and the model's JSON schema the `response_format`. So the judge gets our cache,
endpoint concurrency limit, retries, repair round and counters; a failed call raises
`JudgeCallError` with the layer's reason instead of a silent NaN.

The offline backend and the simulator answer the ragas requests of the metrics ragwatch uses
(table `OFFLINE_JUDGEMENTS`) lexically and deterministically, through the one offline claim rule
that ragwatch's own judge prompts share (`pipelines.models.offline_judge`: `claims`, `support`).
The inputs are read back from ragas' prompt text, where the final input is the last
`input: {json}` block, after the few-shot examples.

ragas' AnswerRelevancy sends the same prompt N times and averages over the N questions it gets
back; at a judge's low temperature, or from our cache, they would all be one question. A
`RagasLLM` therefore numbers repeats of a prompt (use one instance per score): repeat k > 0 is
sampled (temperature `SAMPLED_TEMPERATURE`) under a system note naming the sample, so it is a
different request with its own cache entry.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from pipelines.models.embeddings import Embedder
from pipelines.models.llm import LLM
from pipelines.models.offline_judge import claims, question_back, support, useful
from pipelines.models.prompts import REPAIR_REQUEST, SAMPLE_NOTE, Prompt, sample_index

# Must precede the first ragas import: ragas reports usage over the network unless told not to.
os.environ["RAGAS_DO_NOT_TRACK"] = "true"

from ragas.embeddings.base import BaseRagasEmbedding  # noqa: E402
from ragas.llms.base import InstructorBaseRagasLLM  # noqa: E402
from ragas.metrics.collections.answer_relevancy.util import AnswerRelevanceOutput  # noqa: E402
from ragas.metrics.collections.context_precision.util import ContextPrecisionOutput  # noqa: E402
from ragas.metrics.collections.context_recall.util import ContextRecallOutput  # noqa: E402
from ragas.metrics.collections.faithfulness.util import NLIStatementOutput, StatementGeneratorOutput  # noqa: E402
from ragas.metrics.collections.noise_sensitivity import util as noise_util  # noqa: E402

R = TypeVar("R", bound=BaseModel)
SAMPLED_TEMPERATURE = 0.3
"""Temperature of repeated requests (ragas' own choice when it asks for several completions)."""
INPUT_MARK = re.compile(r"^\s*input:\s*", re.I | re.M)
JSON_LINE_START = re.compile(r"^\{", re.M)


class JudgeCallError(RuntimeError):
    """A judge request that failed in our model layer; the message is the reason for the score."""


class RagasRequest(BaseModel):
    prompt: str
    """ragas' full prompt text: instruction, output schema, examples, then `input: {json}`."""
    sample: int = 0
    """Index of this request among identical requests of one score (see the module docstring)."""


class RagasPrompt(Prompt[RagasRequest, BaseModel]):
    """One ragas response model as a prompt of our layer; `offline` answers from
    `OFFLINE_JUDGEMENTS`."""

    input_model = RagasRequest
    instructions = ""  # ragas' prompt carries its own instruction, schema and examples

    def __init__(self, response_model: type[BaseModel]):
        self.output_model = response_model
        self.name = prompt_name(response_model)
        judgement = OFFLINE_JUDGEMENTS.get(response_model)
        self.step = judgement.step if judgement else response_model.__name__
        self._answer = judgement.answer if judgement else None

    def messages(self, inputs: RagasRequest) -> list[dict[str, str]]:
        user = {"role": "user", "content": inputs.prompt}
        if inputs.sample == 0:
            return [user]
        return [{"role": "system", "content": SAMPLE_NOTE.format(number=inputs.sample + 1)}, user]

    def inputs_from_messages(self, messages: list[dict]) -> RagasRequest:
        # The first user message is the prompt; later ones are repair requests.
        prompts = [
            m["content"]
            for m in messages
            if m.get("role") == "user" and isinstance(m.get("content"), str)
        ]
        prompts = [p for p in prompts if not p.startswith(REPAIR_REQUEST)]
        if not prompts:
            raise ValueError(f"no ragas prompt text for {self.name!r} in the user messages")
        return RagasRequest(prompt=prompts[0], sample=sample_index(messages))

    def offline(self, inputs: RagasRequest) -> BaseModel:
        if self._answer is None:
            raise NotImplementedError(
                f"no offline judgement for the ragas response model {self.output_model.__name__}; "
                "add one to OFFLINE_JUDGEMENTS in pipelines.models.ragas_adapter"
            )
        return self.output_model.model_validate(
            self._answer(last_input(inputs.prompt), inputs.sample)
        )


def prompt_name(response_model: type[BaseModel]) -> str:
    """`ragas_<ModelName>`. Models that share a class name across ragas metrics
    (StatementGeneratorOutput) share the name and the offline judgement; their schemas still give
    them separate cache entries."""
    return f"ragas_{response_model.__name__}"


_PROMPTS_BY_MODEL: dict[type[BaseModel], RagasPrompt] = {}
_PROMPTS_LOCK = threading.Lock()


def prompt_for(response_model: type[BaseModel]) -> RagasPrompt:
    with _PROMPTS_LOCK:
        if response_model not in _PROMPTS_BY_MODEL:
            _PROMPTS_BY_MODEL[response_model] = RagasPrompt(response_model)
        return _PROMPTS_BY_MODEL[response_model]


class RagasLLM(InstructorBaseRagasLLM):
    """ragas' LLM interface on our `LLM`. Use one instance per score: it numbers repeated prompts
    and keeps the replies, so a caller can tell a real score from ragas' fallbacks."""

    def __init__(self, llm: LLM):
        self.llm = llm
        self.replies: list[BaseModel] = []
        self._prompts: list[str] = []
        self._repeats: Counter[tuple[type[BaseModel], str]] = Counter()

    async def agenerate(self, prompt: str, response_model: type[R]) -> R:
        ours, request = self._request(prompt, response_model)
        return self._accept(ours, prompt, await self.llm.run(ours, request))

    def generate(self, prompt: str, response_model: type[R]) -> R:
        ours, request = self._request(prompt, response_model)
        return self._accept(ours, prompt, self.llm.run_sync(ours, request))

    def replies_of(self, response_model: type[R]) -> list[R]:
        return [reply for reply in self.replies if type(reply) is response_model]

    def exchanges_of(self, response_model: type[R]) -> list[tuple[dict[str, Any], R]]:
        """(the request's input object, the reply) for every reply of this model, in order: what a
        caller needs to check that a reply answers its request (one verdict per statement sent,
        say)."""
        return [
            (last_input(prompt), reply)
            for prompt, reply in zip(self._prompts, self.replies)
            if type(reply) is response_model
        ]

    def _request(
        self, prompt: str, response_model: type[BaseModel]
    ) -> tuple[RagasPrompt, RagasRequest]:
        ours = prompt_for(response_model)
        sample = self._repeats[response_model, prompt]
        self._repeats[response_model, prompt] += 1
        if sample:
            ours = _sampled(ours)
        return ours, RagasRequest(prompt=prompt, sample=sample)

    def _accept(self, ours: RagasPrompt, prompt: str, result: Any) -> Any:
        if not result.ok:
            raise JudgeCallError(f"judge {ours.step} failed: {result.error}")
        self.replies.append(result.value)
        self._prompts.append(prompt)
        return result.value


def _sampled(prompt: RagasPrompt) -> RagasPrompt:
    sampled = RagasPrompt(prompt.output_model)
    sampled.temperature = SAMPLED_TEMPERATURE
    return sampled


EMBEDDING_MEMORY = 50_000
_EMBEDDED: dict[tuple[str, str], list[float]] = {}
# Fast tokenizers refuse to be used from two threads at once ("Already borrowed").
_EMBEDDING_LOCK = threading.Lock()


def embed_remembered(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    """`embedder.embed(texts)`, remembering vectors per process: answer relevancy embeds the same
    questions again on every rerun. A failure raises JudgeCallError with the backend's reason."""
    try:
        with _EMBEDDING_LOCK:
            missing = [t for t in dict.fromkeys(texts) if (embedder.name, t) not in _EMBEDDED]
            if missing:
                for text, vector in zip(missing, embedder.embed(missing)):
                    _EMBEDDED[(embedder.name, text)] = vector
                    if len(_EMBEDDED) > EMBEDDING_MEMORY:
                        _EMBEDDED.pop(next(iter(_EMBEDDED)))
            return [_EMBEDDED[(embedder.name, t)] for t in texts]
    except Exception as error:  # the reason must reach the score, whatever the backend raised
        raise JudgeCallError(f"embeddings ({embedder.name}) failed: {error}") from error


class RagasEmbeddings(BaseRagasEmbedding):
    """ragas' embedding interface on our `Embedder` (vectors are already unit length)."""

    def __init__(self, embedder: Embedder):
        super().__init__(cache=None)
        self.embedder = embedder

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        return self.embed_texts([text])[0]

    def embed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        return embed_remembered(self.embedder, texts)

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        return (await self.aembed_texts([text]))[0]

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        return await asyncio.to_thread(self.embed_texts, list(texts))


# --- offline judgements ----------------------------------------------------------------------


def last_input(prompt: str) -> dict[str, Any]:
    """The JSON object of the last `input:` line of a ragas prompt (its examples come before it);
    else the last JSON object that starts a line."""
    decoder = json.JSONDecoder()
    starts = [m.end() for m in INPUT_MARK.finditer(prompt)] or [
        m.start() for m in JSON_LINE_START.finditer(prompt)
    ]
    for start in reversed(starts):
        try:
            value, _ = decoder.raw_decode(prompt, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError("no input JSON object in the ragas prompt")


def _statements(payload: dict[str, Any], sample: int) -> dict[str, Any]:
    # Faithfulness sends {"question", "answer"}; NoiseSensitivity sends {"question", "text"}.
    return {"statements": claims(str(payload.get("answer", payload.get("text", ""))))}


def _statement_verdicts(payload: dict[str, Any], sample: int) -> dict[str, Any]:
    context = str(payload.get("context", ""))
    verdicts = []
    for statement in payload.get("statements", []):
        verdict, reason = support(statement, context)
        verdicts.append({"statement": statement, "reason": reason, "verdict": verdict})
    return {"statements": verdicts}


def _question_back(payload: dict[str, Any], sample: int) -> dict[str, Any]:
    question, noncommittal = question_back(str(payload.get("response", "")), sample)
    return {"question": question, "noncommittal": noncommittal}


def _context_useful(payload: dict[str, Any], sample: int) -> dict[str, Any]:
    verdict, reason = useful(str(payload.get("context", "")), str(payload.get("answer", "")))
    return {"reason": reason, "verdict": verdict}


def _reference_attribution(payload: dict[str, Any], sample: int) -> dict[str, Any]:
    context = str(payload.get("context", ""))
    classifications = []
    for claim in claims(str(payload.get("answer", ""))):
        attributed, reason = support(claim, context)
        classifications.append({"statement": claim, "reason": reason, "attributed": attributed})
    return {"classifications": classifications}


@dataclass(frozen=True)
class OfflineJudgement:
    step: str
    """What the request does, for failure reasons: "judge claim verification failed: ..."."""
    answer: Callable[[dict[str, Any], int], dict[str, Any]]
    """(the prompt's input object, sample index) -> the response model's fields."""


OFFLINE_JUDGEMENTS: dict[type[BaseModel], OfflineJudgement] = {
    StatementGeneratorOutput: OfflineJudgement("claim extraction", _statements),
    NLIStatementOutput: OfflineJudgement("claim verification", _statement_verdicts),
    AnswerRelevanceOutput: OfflineJudgement("question generation", _question_back),
    ContextPrecisionOutput: OfflineJudgement("context usefulness verdict", _context_useful),
    ContextRecallOutput: OfflineJudgement("reference claim attribution", _reference_attribution),
    noise_util.StatementGeneratorOutput: OfflineJudgement("claim extraction", _statements),
    noise_util.StatementFaithfulnessOutput: OfflineJudgement(
        "claim verification", _statement_verdicts
    ),
}
"""The ragas response models of the metrics ragwatch computes, with their offline answers."""


def ragas_prompts() -> list[RagasPrompt]:
    """The ragas requests of the metrics ragwatch computes, as prompts a registry can answer by
    name."""
    return [prompt_for(model) for model in OFFLINE_JUDGEMENTS]
