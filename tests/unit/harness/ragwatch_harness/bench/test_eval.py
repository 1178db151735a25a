"""The judge benchmark, small: ragwatch and ragas.evaluate() on the simulator, offline, and the
simulator's answers to ragas' legacy prompts."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import warnings

import httpx
import pytest

from pipelines.cli.prompt_catalog import all_prompts
from pipelines.core.text import sentences
from pipelines.models.simulator import running_simulator
from ragwatch_harness.bench.eval import METRICS, bench_items, format_eval_bench, run_eval_bench
from tests.conftest import ROOT

SMALL = {"n_items": 12, "latency_s": 0.05, "capacity": 4}
CALLS_PER_ITEM = (
    3  # ours: claim extraction, the 3 relevancy questions (n = 3), one verification for the rest
)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list:
    """Refuses (and records) every connection that does not stay on this machine."""
    attempts: list = []
    connect, connect_ex, getaddrinfo = (
        socket.socket.connect,
        socket.socket.connect_ex,
        socket.getaddrinfo,
    )

    def local(host) -> bool:
        if host is None or host == "localhost":
            return True
        try:
            return ipaddress.ip_address(
                host.decode() if isinstance(host, bytes) else host
            ).is_loopback
        except ValueError:
            return False

    def loopback(address) -> bool:
        return not isinstance(address, tuple) or local(address[0])  # not a tuple: a Unix socket

    def resolve(host, *args, **kwargs):
        # A lookup comes before any connection, and fails by itself where there is no DNS: record it
        # too.
        if not local(host):
            attempts.append(host)
            raise socket.gaierror(f"network unreachable in this test: {host}")
        return getaddrinfo(host, *args, **kwargs)

    def guarded(original):
        def call(self, address):
            if not loopback(address):
                attempts.append(address)
                raise OSError(f"network unreachable in this test: {address}")
            return original(self, address)

        return call

    monkeypatch.setattr(socket.socket, "connect", guarded(connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(connect_ex))
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return attempts


def test_bench_runs_offline_and_a_cached_rerun_sends_nothing(no_network) -> None:
    result = run_eval_bench(**SMALL)
    n = SMALL["n_items"]
    ours, rerun, theirs = result["ragwatch"], result["rerun"], result["ragas"]

    assert no_network == []  # not ragas, tiktoken, LangChain nor the embedding model reached out
    assert {
        "n_items",
        "latency_s",
        "capacity",
        "seed",
        "metrics",
        "ragwatch",
        "rerun",
        "ragas",
        "ratio",
    } <= set(result)
    assert ours["requests"] == ours["counters"]["calls"] == n * CALLS_PER_ITEM
    assert ours["endpoints"] == {"chat/completions": n * CALLS_PER_ITEM}  # embeddings are local
    assert (ours["scored"], ours["failed"], ours["skipped"]) == (n * len(METRICS), 0, 0)
    assert ours["ideal_s"] == pytest.approx(
        ours["requests"] * SMALL["latency_s"] / SMALL["capacity"]
    )
    assert 0 < ours["efficiency"] <= 1.05 and ours["max_concurrent"] <= SMALL["capacity"]

    assert ours["per_item"]["requests"] == CALLS_PER_ITEM
    assert (
        ours["prompt_tokens"] == ours["counters"]["prompt_tokens"] > 0
    )  # the simulator's count is the client's
    assert 0 < ours["per_item"]["prompt_tokens"] < theirs["per_item"]["prompt_tokens"]
    assert 0 <= ours["prefix_cached_share"] <= 1 and 0 <= theirs["prefix_cached_share"] <= 1

    assert rerun["requests"] == 0 and rerun["llm_calls"] == 0
    assert rerun["cache_hits"] == ours["counters"]["calls"]
    assert rerun["share"] == pytest.approx(rerun["wall_s"] / ours["wall_s"])

    # ragas: 2 faithfulness, 1 relevancy request (n questions at once), 3 precision, 1 recall; 2
    # embedding calls
    assert theirs["endpoints"] == {"chat/completions": n * 7, "embeddings": n * 2}
    assert theirs["requests"] == n * 9 and theirs["nan_total"] == 0
    assert set(theirs["nan"]) == set(theirs["means"]) == set(METRICS)
    assert result["ratio"] == pytest.approx(ours["wall_s"] / theirs["wall_s"])

    table = format_eval_bench(result)
    for row in (
        "requests served",
        "requests per item",
        "prompt tokens per item",
        "wall time",
        "efficiency",
        "failed scores",
        "rerun wall ÷ first wall",
        "prompt tokens ÷ ragas' prompt tokens",
    ):
        assert row in table


def test_items_are_deterministic_and_built_from_the_first_context() -> None:
    items = bench_items(20, seed=5)
    assert [i.model_dump() for i in items] == [i.model_dump() for i in bench_items(20, seed=5)]
    assert [i.model_dump() for i in items] != [i.model_dump() for i in bench_items(20, seed=6)]
    for item in items:
        first = sentences(item.contexts[0])
        assert len(item.contexts) == 3 and len(set(item.context_ids)) == 3
        assert item.reference in first and len(sentences(item.answer)) >= 2
        assert all(
            part in item.contexts[0].replace("\n", " ") or part in first
            for part in sentences(item.answer)
        )


def _legacy_prompt(prompt_class, data) -> str:
    return prompt_class().to_string(data)


def test_simulator_answers_ragas_legacy_prompts_with_one_choice_per_n() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ragas.metrics._answer_relevance import ResponseRelevanceInput, ResponseRelevancePrompt
        from ragas.metrics._context_precision import QAC, ContextPrecisionPrompt

    answer = "Qdrant listens on port 6333 for the REST API. The gRPC interface uses port 6334."
    relevance = _legacy_prompt(ResponseRelevancePrompt, ResponseRelevanceInput(response=answer))
    precision = _legacy_prompt(
        ContextPrecisionPrompt,
        QAC(
            question="Which port?",
            context="Snapshots are files.",
            answer="The REST API listens on port 6333.",
        ),
    )
    with running_simulator(prompts=all_prompts()) as url:

        def ask(prompt: str, **extra) -> httpx.Response:
            body = {"model": "m", "messages": [{"role": "user", "content": prompt}], **extra}
            return httpx.post(f"{url}/chat/completions", json=body)

        questions = [c["message"]["content"] for c in ask(relevance, n=3).json()["choices"]]
        assert len(questions) == 3 and len(set(questions)) == 3  # three samples, as ragas asked
        verdict = ask(precision).json()["choices"]
        assert len(verdict) == 1 and '"verdict":0' in verdict[0]["message"]["content"].replace(
            " ", ""
        )

        unknown = precision.replace('"title": "Verification"', '"title": "SomethingElse"')
        refused = ask(unknown)
        assert refused.status_code == 400 and "SomethingElse" in refused.json()["error"]["message"]
        # An app's own free-text RAG prompt is answered extractively: the context sentence that
        # covers the question.
        rag = ask(
            "Context:\nBackups run every night at 02:00 UTC. The console uses port 9090.\n\nQuestion: When do backups run?"
        )
        assert (
            rag.json()["choices"][0]["message"]["content"]
            == "Backups run every night at 02:00 UTC."
        )
        assert ask("").status_code == 400  # no text to answer


def test_cli_prints_the_table() -> None:
    def ragwatch(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "bench", "eval", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "COLUMNS": "140"},
        )

    shown = ragwatch(
        "--items", "4", "--latency", "0.01", "--capacity", "4", "--ragas-embeddings", "local"
    )
    assert shown.returncode == 0, shown.stderr
    assert "ragas (local emb.)" in shown.stdout and "rerun wall ÷ first wall" in shown.stdout
    refused = ragwatch("--ragas-embeddings", "remote")
    assert refused.returncode == 1 and "simulator or local" in refused.stdout
