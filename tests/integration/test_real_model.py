"""ragwatch against a small real model over the OpenAI protocol (docs/how-to/real-model.md).

The simulator answers only prompts it recognises; here Gemma 3 270M, served by llama-cpp-python's
OpenAI-compatible server (tests/support/llama_server.py), reads ragwatch's real prompts: golden
generation, the reference RAG's answer prompt, every judge metric through ragas, and a tool-calling
chat, all over HTTP with the task's JSON schema as `response_format` and Gemma 3's chat template.
ragwatch's requests are sent as they are in production; the server caps each reply (see
tests/support/llama_server.py).

A 270M base model answers poorly, so these tests assert robustness, not quality: no crash, every
failure carries a reason, no NaN, every score is ok (with a value in range), failed or skipped,
and the client's counters add up. What the model managed is recorded, not asserted: the summary
(valid-JSON rate, per-metric outcomes, wall times) goes to `.ragwatch/real-model-smoke.json` and,
with `-s`, to the terminal.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pipelines.core.agent_tools import TOOLS
from pipelines.core.records import GoldenItem
from pipelines.core.settings import ModelEndpoint
from pipelines.evaluation.metrics.judge import JUDGE_METRICS, JudgeInput, judge_items
from pipelines.evaluation.runs.rag_prompt import Context, RagAnswerPrompt, RagInput
from pipelines.golden.generate import generate_items
from pipelines.golden.params import GoldenParams
from pipelines.golden.plan import Job, plan_jobs, position_key
from pipelines.models.embeddings import LocalEmbedder
from pipelines.models.llm import LLM, LLMCounters, LLMResult
from pipelines.models.openai_compatible import OpenAICompatibleLLM
from ragwatch_harness.demo.corpus_files import demo_corpus_chunks
from tests.support.llama_server import (
    GEMMA3_STOP_TOKEN_IDS,
    MAX_REPLY_TOKENS,
    LlamaServer,
    adapt_request,
    ensure_model,
    gemma3_chat_formatter,
    running_llama_server,
)

pytestmark = pytest.mark.real_model

ROOT = Path(__file__).resolve().parents[2]
SUMMARY_PATH = ROOT / ".ragwatch" / "real-model-smoke.json"
SEED_POSITIONS = (
    "pydoc/break#0",
    "pydoc/continue#0",
    "pydoc/pass#0",
    "guias/guia-de-despliegue.md#reversion/0",
)
"""Short demo chunks (50-100 words), chosen by position so that a corpus refresh keeps them."""
GOLDEN_PARAMS = GoldenParams(
    name="smoke",
    questions_per_seed=1,
    seeds=1,
    multi_hop=1,
    adversarial=1,
    tool_triples=1,
    from_traces=1,
    trace_days=0,
    dev_fraction=0.3,
    review_fraction=0.15,
    near_duplicate_cosine=0.95,
    batch_size=8,
)
"""One job of each kind, plus one trace job: five model calls before repairs."""
RUN = {"run_id": "real-model-smoke", "suite": "offline", "dataset_version": "smoke"}
TOOLS_UNSUPPORTED = (
    "no tool call: llama-cpp-python's server constrains a reply to a tool only when tool_choice names it, "
    'ragwatch sends tool_choice "auto", and Gemma 3\'s chat template does not show the model the tools'
)
COLOUR = {
    "type": "object",
    "properties": {"colour": {"type": "string", "enum": ["blue", "grey"]}},
    "required": ["colour"],
    "additionalProperties": False,
}
SUMMARY: dict[str, object] = {}


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    started = time.monotonic()
    with running_llama_server() as server:
        SUMMARY["server"] = {
            "start_s": round(time.monotonic() - started, 1),
            "max_reply_tokens": MAX_REPLY_TOKENS,
        }
        yield server
        # Wall times depend on what else the machine runs; the server's CPU time does not.
        SUMMARY["server"]["cpu_s"] = server.cpu_seconds()
        SUMMARY["server"]["wall_s"] = round(time.monotonic() - started, 1)
    _write_summary()


def real_llm(server: LlamaServer) -> OpenAICompatibleLLM:
    # llama.cpp's server computes one request at a time: more in flight would only queue there while
    # the client's per-request timeout runs.
    endpoint = ModelEndpoint(
        base_url=server.base_url,
        model=server.model,
        max_concurrency=1,
        timeout_s=300,
        max_retries=1,
    )
    return OpenAICompatibleLLM(endpoint, cache=None, backoff_s=0.2)


def seed_chunks() -> list:
    chunks = {position_key(c.chunk_id): c for c in demo_corpus_chunks()}
    return [chunks[p] for p in SEED_POSITIONS]


def json_stats(counters: LLMCounters) -> dict[str, object]:
    """How many of the model's replies were valid for their schema. Without a cache each item is one
    request, plus a repair request when its first reply was invalid, plus retries of failed
    requests."""
    s = counters.summary()
    after_repair = sum(n for kind, n in s["failure_kinds"].items() if kind.endswith("after repair"))
    valid, invalid = s["items"] - s["failures"], s["repairs"] + after_repair
    replies = valid + invalid
    return {
        **s,
        "valid_replies": valid,
        "invalid_replies": invalid,
        "valid_json_rate": round(valid / replies, 3) if replies else None,
    }


def assert_counters_add_up(counters: LLMCounters, items: int) -> None:
    s = counters.summary()
    assert s["items"] == items and s["cache_hits"] == 0
    # Every request is an item's first request, a retry, a repair request, or a sample asked for
    # alone (llama.cpp's server ignores OpenAI's `n` and sends one choice).
    assert s["calls"] == s["items"] + s["retries"] + s["repairs"] + s["sample_requests"]
    assert s["prompt_tokens"] > 0 and s["completion_tokens"] > 0
    assert sum(s["failure_kinds"].values()) == s["failures"]


# --- why tests/support/llama_server.py adds what it adds (no server needed) -----------------------


def test_llama_cpp_server_takes_structured_outputs_only_in_its_own_dialect():
    """When the first assertion fails, the server has learnt OpenAI's json_schema form: drop the
    rewrite."""
    from llama_cpp.server.types import CreateChatCompletionRequest
    from pydantic import ValidationError

    messages = [{"role": "user", "content": "hi"}]
    standard = {
        "type": "json_schema",
        "json_schema": {"name": "colour", "strict": True, "schema": COLOUR},
    }
    with pytest.raises(ValidationError, match="json_object"):
        CreateChatCompletionRequest.model_validate(
            {"messages": messages, "response_format": standard}
        )
    own = {"type": "json_object", "schema": COLOUR}
    accepted = CreateChatCompletionRequest.model_validate(
        {"messages": messages, "response_format": own}
    )
    assert accepted.response_format == own

    adapted = json.loads(
        adapt_request(json.dumps({"messages": messages, "response_format": standard}).encode(), 64)
    )
    assert adapted == {"messages": messages, "response_format": own, "max_tokens": 64}
    assert json.loads(adapt_request(b'{"max_tokens": 500}', 64))["max_tokens"] == 64
    assert (
        json.loads(adapt_request(b'{"max_tokens": 0}', 64))["max_tokens"] == 64
    )  # 0 means "no limit" there
    for untouched in (
        b'{"response_format": {"type": "json_object"}, "max_tokens": 8}',
        b"[]",
        b"not json",
    ):
        assert adapt_request(untouched, 64) == untouched


def test_the_pypi_gguf_brings_no_chat_template_so_the_server_gets_gemma3s():
    """Without the `gemma3` format the server falls back to Llama 2's [INST] format, and
    llama-cpp-python's own `gemma` format drops system messages, where ragwatch's task instructions
    are."""
    import llama_cpp
    from llama_cpp.llama_chat_format import format_gemma

    vocab = llama_cpp.Llama(model_path=str(ensure_model()), vocab_only=True, verbose=False)
    assert vocab.metadata["general.architecture"] == "gemma3"
    assert "tokenizer.chat_template" not in vocab.metadata
    stop_ids = [
        vocab.tokenize(t.encode(), add_bos=False, special=True) for t in ("<eos>", "<end_of_turn>")
    ]
    assert stop_ids == [[token] for token in GEMMA3_STOP_TOKEN_IDS]
    messages = [
        {"role": "system", "content": "Answer with JSON."},
        {"role": "user", "content": "Hi"},
    ]
    assert "Answer with JSON." not in format_gemma(messages).prompt
    assert gemma3_chat_formatter()(messages=messages).prompt == (
        "<bos><start_of_turn>user\nAnswer with JSON.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
    )


def test_a_reply_that_fits_the_schema_but_cannot_make_an_item_fails_that_job_only():
    """The schema lets a model write an empty question; GoldenItem does not."""

    class EmptyQuestion(LLM):
        model = "empty-question"

        async def _run(self, task, inputs):
            return LLMResult(task.output_model(question="", answer="-"), None, self.model)

        async def _chat_with_tools(self, messages, tools):
            raise NotImplementedError

    chunk = {
        "chunk_id": "doc#s/0-ab",
        "document": "doc",
        "section": "s",
        "language": "en",
        "text": "Some text.",
    }
    payload = {"chunk": chunk, "kind": "false_premise"}
    jobs = [Job(job_id="j", kind="adversarial", source_ref="doc#s/0", payload=payload)]
    items, failures = generate_items(EmptyQuestion(), jobs, corpus_version="v", created_at="c")
    assert items == []
    assert failures == [
        {
            "job_id": "j",
            "kind": "adversarial",
            "source_ref": "doc#s/0",
            "error": "unusable reply: question: String should have at least 1 character",
        }
    ]


# --- the real model -------------------------------------------------------------------------------


def test_the_server_speaks_the_openai_protocol_with_gemma3s_chat_template(llama):
    models = httpx.get(f"{llama.base_url}/models").json()
    assert [m["id"] for m in models["data"]] == [llama.model]
    reply = httpx.post(
        f"{llama.base_url}/chat/completions",
        timeout=300,
        json={
            "model": llama.model,
            "max_tokens": 16,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": "Answer with JSON."},
                {"role": "user", "content": "What colour is the sky on a clear day?"},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "colour", "strict": True, "schema": COLOUR},
            },
        },
    ).json()
    message = reply["choices"][0]["message"]
    assert message["role"] == "assistant"
    assert json.loads(message["content"])["colour"] in (
        "blue",
        "grey",
    )  # the grammar held the reply to the schema
    # <bos>, the turn markers and the system text folded into the user turn: Gemma 3's template at
    # work.
    assert reply["usage"]["prompt_tokens"] > 20


def test_golden_generation_reads_the_real_prompts(llama):
    llm = real_llm(llama)
    chunks = seed_chunks()
    by_doc = {c.document: c for c in chunks}
    partner = {c.chunk_id: chunks[(i + 1) % len(chunks)] for i, c in enumerate(chunks)}
    trace = {
        "trace_id": "trace-rollback",
        "question": "¿Cómo vuelvo a la versión anterior del asistente?",
        "language": "es",
    }
    jobs = plan_jobs(
        chunks,
        GOLDEN_PARAMS,
        related=lambda c: partner[c.chunk_id],
        traces=[trace],
        trace_contexts=lambda q: [by_doc["guias/guia-de-despliegue.md"]],
    )
    kinds = ("chunk_questions", "multi_hop", "adversarial", "tool", "trace")
    assert Counter(j.kind for j in jobs) == dict.fromkeys(kinds, 1)

    started, cpu = time.monotonic(), llama.cpu_seconds()
    items, failures = generate_items(llm, jobs, corpus_version="smoke", created_at="2025-01-01")
    wall_s, cpu_s = time.monotonic() - started, _since(cpu, llama.cpu_seconds())

    assert all(isinstance(item, GoldenItem) and item.question.strip() for item in items)
    assert {item.generator_model for item in items} <= {llm.model}
    job_ids = {j.job_id for j in jobs}
    for failure in failures:
        assert failure["job_id"] in job_ids and failure["error"].strip(), failure
    assert len({f["job_id"] for f in failures}) == len(failures)  # one record per failed job
    assert_counters_add_up(llm.counters, items=len(jobs))
    # Failed calls, plus replies that fit the schema but could not make an item ("unusable reply").
    assert llm.counters.failures == sum(
        not f["error"].startswith("unusable reply") for f in failures
    )

    failed_ids = {f["job_id"] for f in failures}
    SUMMARY["golden"] = {
        "jobs": len(jobs),
        "failed_jobs": len(failures),
        "items": len(items),
        "ok_jobs_by_kind": dict(Counter(j.kind for j in jobs if j.job_id not in failed_ids)),
        "failure_reasons": [f"{f['kind']}: {f['error']}" for f in failures],
        "questions": [item.question for item in items],
        "wall_s": round(wall_s, 1),
        "server_cpu_s": cpu_s,
        "llm": json_stats(llm.counters),
    }


def test_every_judge_metric_on_the_real_model_gives_a_score_or_a_reason(llama):
    chunk = next(c for c in seed_chunks() if c.document == "pydoc/break")
    question = "What does the break statement do inside a loop?"
    reference = (
        'break terminates the nearest enclosing loop, skipping the loop\'s optional "else" clause.'
    )

    # The system under test's answer: the reference RAG's prompt, through the model.
    generator = real_llm(llama)
    started = time.monotonic()
    rag_input = RagInput(
        question=question,
        language="en",
        contexts=[Context(chunk_id=chunk.chunk_id, text=chunk.text)],
    )
    answer = generator.run_sync(RagAnswerPrompt(), rag_input)
    assert answer.ok or answer.error.strip()
    assert_counters_add_up(generator.counters, items=1)
    SUMMARY["rag_answer"] = {
        "ok": answer.ok,
        "answer": answer.value.answer if answer.ok else None,
        "error": answer.error,
        "wall_s": round(time.monotonic() - started, 1),
    }

    items = [
        JudgeInput(
            item_id="break-en",
            stratum="single_hop/en",
            question=question,
            reference=reference,
            answer=answer.value.answer if answer.ok else None,
            contexts=[chunk.text],
            context_ids=[chunk.chunk_id],
            gold_chunk_ids=[chunk.chunk_id],
        ),
        # The system under test failed (no answer, no contexts): every metric is skipped, without a
        # call.
        JudgeInput(
            item_id="no-answer",
            stratum="single_hop/en",
            question=question,
            reference=reference,
            answer=None,
            contexts=[],
        ),
    ]
    metrics = list(JUDGE_METRICS)
    judge, embedder = real_llm(llama), LocalEmbedder()
    started, cpu = time.monotonic(), llama.cpu_seconds()
    scores = asyncio.run(judge_items(items, metrics, judge, embedder, **RUN))
    wall_s, cpu_s = time.monotonic() - started, _since(cpu, llama.cpu_seconds())

    assert {(s.item_id, s.metric) for s in scores} == {
        (i.item_id, m) for i in items for m in metrics
    }
    assert len(scores) == len(items) * len(metrics)
    for score in scores:
        assert score.status in ("ok", "failed", "skipped"), score
        assert score.judge_model == judge.model
        if score.status == "ok":
            assert (
                score.value is not None and math.isfinite(score.value) and 0.0 <= score.value <= 1.0
            ), score
        else:
            assert score.value is None and score.error and score.error.strip(), score
    assert {s.metric for s in scores if s.item_id == "no-answer" and s.status == "skipped"} == set(
        metrics
    )
    assert (
        judge.counters.items > 0
    )  # context precision and recall need no answer: some judging always happens
    assert_counters_add_up(judge.counters, items=judge.counters.items)

    per_metric = {}
    for metric in metrics:
        mine = [s for s in scores if s.metric == metric]
        statuses = Counter(s.status for s in mine)
        per_metric[metric] = {
            "ok": statuses["ok"],
            "failed": statuses["failed"],
            "skipped": statuses["skipped"],
            "values": [round(s.value, 3) for s in mine if s.status == "ok"],
            "reasons": sorted({s.error for s in mine if s.status != "ok"}),
        }
    SUMMARY["judge"] = {
        "items": len(items),
        "metrics": per_metric,
        "wall_s": round(wall_s, 1),
        "server_cpu_s": cpu_s,
        "llm": json_stats(judge.counters),
    }


def test_tool_calling_through_the_real_server_gives_no_call_and_says_why(llama):
    question = "How many tickets mentioning timeouts were opened last week?"
    messages = [{"role": "user", "content": question}]

    # The server never shows the model the tools: the prompt is the same with and without them.
    def prompt_tokens(**extra) -> int:
        body = {
            "model": llama.model,
            "messages": messages,
            "max_tokens": 1,
            "temperature": 0,
            **extra,
        }
        reply = httpx.post(f"{llama.base_url}/chat/completions", json=body, timeout=300).json()
        assert not reply["choices"][0]["message"].get("tool_calls")
        return reply["usage"]["prompt_tokens"]

    assert prompt_tokens(tools=TOOLS, tool_choice="auto") == prompt_tokens()

    llm = real_llm(llama)
    started = time.monotonic()
    result = asyncio.run(llm.chat_with_tools(messages, TOOLS))
    assert_counters_add_up(llm.counters, items=1)
    # ragwatch reads a chat without tool calls as "answered in text": no calls, no error. The tool
    # metrics then score the turn a wrong choice (tool_selection_accuracy 0), which is what
    # happened.
    assert result.ok and result.value == []
    SUMMARY["tools"] = {
        "status": "failed",
        "reason": TOOLS_UNSUPPORTED,
        "client_result": {"ok": result.ok, "calls": result.value, "error": result.error},
        "wall_s": round(time.monotonic() - started, 1),
        "llm": llm.counters.summary(),
    }


def _since(before: float | None, after: float | None) -> float | None:
    return round(after - before, 1) if before is not None and after is not None else None


def _write_summary() -> None:
    SUMMARY_PATH.parent.mkdir(parents=True, exist_ok=True)
    SUMMARY_PATH.write_text(json.dumps(SUMMARY, indent=2, ensure_ascii=False, default=str) + "\n")
    print(f"\nreal-model smoke summary ({SUMMARY_PATH}):\n{SUMMARY_PATH.read_text()}")
