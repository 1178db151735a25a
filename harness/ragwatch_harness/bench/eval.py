"""ragwatch's judge against `ragas.evaluate()`, side by side in one run, on the model simulator.

Both paths score the same generated items with the same four metrics against a simulator with a
fixed latency per request and a fixed capacity (requests served at once; the rest queue), each
on a fresh simulator so its request counters are its own. Each simulator is `ragwatch simulate-llm`
in a process of its own, as a model server would be: in a thread of this process its CPU work would
compete for the interpreter lock with the client being measured.

- ragwatch: `judge_items` over `OpenAICompatibleLLM` (endpoint concurrency = the capacity, a fresh
  cache) and the local embedding model, with ragwatch's consolidated judge (`implementation=
  "ragwatch"`: 3 requests per item, see pipelines.evaluation.metrics.judge); then once more on the
  same cache, which should cost no request at all.
- ragas: `evaluate()` with its defaults (default RunConfig: 16 workers, no batching) and its legacy
  metric classes, on `ChatOpenAI` pointed at the simulator. Its embeddings are `OpenAIEmbeddings`
  on the simulator's `/v1/embeddings` (same local model behind it), or with `ragas_embeddings=
  "local"` the local model in-process, as ragwatch has them: legacy answer relevancy embeds
  synchronously on ragas' event loop, so remote embeddings stall every job for a full latency
  each, and the local variant isolates that. ragas' progress bar is replaced by ours.

The ideal wall time of a path is requests × latency ÷ capacity: every slot busy all the time.
Efficiency is ideal ÷ wall. What a GPU pays is counted per item too: requests, prompt and completion
tokens (the simulator's, 4 characters a token), and the share of prompt tokens a prefix cache like
vLLM's would have served (the simulator keeps one; ragas' few-shot examples repeat in every
prompt). ragas reports a metric it could not compute as NaN; the count of those is part of the
result, next to our failed scores.
"""

from __future__ import annotations

import io
import logging
import math
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import httpx
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pipelines.core.settings import ModelEndpoint
from pipelines.core.text import sentences, words
from pipelines.evaluation.metrics.judge import (  # sets RAGAS_DO_NOT_TRACK before ragas loads
    JudgeImplementation,
    JudgeInput,
    judge_items_sync,
)
from pipelines.models.cache import LLMCache
from pipelines.models.embeddings import LocalEmbedder
from pipelines.models.openai_compatible import OpenAICompatibleLLM
from pipelines.models.simulator import SimulatorKnobs, served_stats
from ragwatch_harness.demo.corpus import load_demo_chunks

METRICS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")
JUDGE_MODEL = "sim-judge"
EMBEDDING_MODEL = "sim-embeddings"
CONTEXTS = 3
ANSWER_SENTENCES = 2
PROSE_WORDS = (5, 60)
"""Answers and references are made of prose sentences: shorter parts of the corpus are headings or
signatures, longer ones code listings run together."""
DEFAULT_LATENCY_S = 0.2
"""Fixed per request. ragas' run is mostly its synchronous embedding calls, one latency each, so the
latency sets how long the default run takes: 0.2 s keeps it near 3 minutes on 2 cores."""
RUN = {"run_id": "bench-eval", "suite": "offline", "dataset_version": "bench"}


def bench_items(n_items: int, seed: int) -> list[JudgeInput]:
    """Golden-like items from the demo corpus, the same for a seed on every machine: the question
    names a chunk's section, the answer is two consecutive sentences of that chunk, the reference
    one of its sentences, and the contexts are that chunk then two chunks of other topics."""
    rng = random.Random(seed)
    chunks = load_demo_chunks()
    prose = {c.chunk_id: [s for s in sentences(c.text) if _prose(s)] for c in chunks}
    sources = [c for c in chunks if len(prose[c.chunk_id]) >= ANSWER_SENTENCES]
    items = []
    for n in range(n_items):
        first = rng.choice(sources)
        others = rng.sample([c for c in chunks if c.topic != first.topic], CONTEXTS - 1)
        parts = prose[first.chunk_id]
        start = rng.randrange(len(parts) - ANSWER_SENTENCES + 1)
        items.append(
            JudgeInput(
                item_id=f"bench-{n:04d}",
                stratum="single_hop/en",
                question=f"What does the Python documentation say about {first.section}?",
                answer=" ".join(parts[start : start + ANSWER_SENTENCES]),
                contexts=[first.text, *(c.text for c in others)],
                reference=rng.choice(parts),
                context_ids=[first.chunk_id, *(c.chunk_id for c in others)],
                gold_chunk_ids=[first.chunk_id],
            )
        )
    return items


def _prose(sentence: str) -> bool:
    return (
        sentence[0].isupper()
        and sentence[-1] in ".!?"
        and PROSE_WORDS[0] <= len(words(sentence)) <= PROSE_WORDS[1]
    )


@contextmanager
def simulator_process(
    knobs: SimulatorKnobs,
    *,
    warm_embeddings: bool = False,
    program: Sequence[str] = (sys.executable, "-m", "pipelines.cli"),
) -> Iterator[str]:
    """`ragwatch simulate-llm` started in its own process with `knobs`; yields its base URL (ending
    in /v1). `warm_embeddings`: load the simulator's embedding model before yielding, so no clock
    pays for it. `program`: how to call ragwatch (the installed `ragwatch` script, as a user would,
    also works)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryFile("w+") as log:
        server = subprocess.Popen(
            [*program, "simulate-llm", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(
                        f"the model simulator did not start on 127.0.0.1:{port}:\n{log.read()[-2000:]}"
                    )
                time.sleep(0.1)
            httpx.post(
                base_url.removesuffix("/v1") + "/admin/knobs", json=knobs.model_dump()
            ).raise_for_status()
            if warm_embeddings:
                httpx.post(
                    f"{base_url}/embeddings",
                    json={"model": EMBEDDING_MODEL, "input": ["warm up"]},
                    timeout=120,
                ).raise_for_status()
            yield base_url
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _ideal(requests: int, latency_s: float, capacity: int) -> float:
    return requests * latency_s / capacity


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _served(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What the simulator served between two snapshots of its stats (a warm-up request comes
    before)."""
    endpoints = {
        name: n - before["endpoints"].get(name, 0) for name, n in after["endpoints"].items()
    }
    return {
        **{
            name: after[name] - before[name]
            for name in ("requests", "prompt_tokens", "completion_tokens", "cached_prompt_tokens")
        },
        "endpoints": {name: n for name, n in endpoints.items() if n},
    }


def run_ragwatch(
    items: list[JudgeInput],
    base_url: str,
    capacity: int,
    cache_dir: str,
    progress: Callable[[int, int], None],
    implementation: JudgeImplementation = "ragwatch",
) -> dict[str, Any]:
    """One `judge_items` run over HTTP; wall time, requests the simulator received, our counters."""
    endpoint = ModelEndpoint(base_url=base_url, model=JUDGE_MODEL, max_concurrency=capacity)
    llm = OpenAICompatibleLLM(endpoint, LLMCache.in_directory(cache_dir))
    before = served_stats(base_url)
    started = time.perf_counter()
    scores = judge_items_sync(
        items,
        list(METRICS),
        llm,
        LocalEmbedder(),
        progress=progress,
        implementation=implementation,
        **RUN,
    )
    wall = time.perf_counter() - started
    stats = served_stats(base_url)
    statuses = Counter(s.status for s in scores)
    return {
        "wall_s": wall,
        "implementation": implementation,
        **_served(before, stats),
        "max_concurrent": stats["max_concurrent"],
        "counters": llm.counters.summary(),
        "scored": statuses["ok"],
        "failed": statuses["failed"],
        "skipped": statuses["skipped"],
        "means": {
            m: _mean([s.value for s in scores if s.metric == m and s.value is not None])
            for m in METRICS
        },
    }


def _ragas_progress_handler(advance: Callable[[], None]):
    from langchain_core.callbacks import BaseCallbackHandler
    from ragas.callbacks import ChainType

    class MetricsDone(BaseCallbackHandler):
        """Advances on every finished (item, metric) job of `evaluate()`, failed ones included."""

        run_inline = True  # a sync handler would otherwise be sent to a thread per event
        ignore_llm = ignore_chat_model = ignore_retriever = ignore_agent = True

        def __init__(self) -> None:
            self.metric_runs: set = set()

        def on_chain_start(self, serialized, inputs, *, run_id, metadata=None, **kwargs) -> None:
            if (metadata or {}).get("type") == ChainType.METRIC:
                self.metric_runs.add(run_id)

        def on_chain_end(self, outputs, *, run_id, **kwargs) -> None:
            self._done(run_id)

        def on_chain_error(self, error, *, run_id, **kwargs) -> None:
            self._done(run_id)

        def _done(self, run_id) -> None:
            if run_id in self.metric_runs:
                self.metric_runs.discard(run_id)
                advance()

    return MetricsDone()


class _FewerGenerations(logging.Handler):
    """Counts ragas' "LLM returned 1 generations instead of requested 3": answer relevancy then
    averages over fewer generated questions than it asked for, and says so only in a log line. It
    happens because the LangChain wrapper sets `n` on the one shared ChatOpenAI before each request,
    and a concurrent job's `n = 1` lands before the request is built."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "generations instead of requested" in record.getMessage():
            self.count += 1


def _local_langchain_embeddings():
    """LangChain's embeddings interface on ragwatch's local model (the vectors the simulator
    serves)."""
    from langchain_core.embeddings import Embeddings

    class LocalEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return LocalEmbedder().embed(list(texts))

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    return LocalEmbeddings()


def run_ragas(
    items: list[JudgeInput],
    base_url: str,
    advance: Callable[[], None],
    embeddings_from: Literal["simulator", "local"] = "simulator",
) -> dict[str, Any]:
    """`ragas.evaluate()` with its defaults on the same items and metrics, through LangChain's
    OpenAI client."""
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas import EvaluationDataset, evaluate
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper

    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", DeprecationWarning
        )  # the legacy classes are what evaluate() runs
        from ragas.metrics import AnswerRelevancy, ContextPrecision, ContextRecall, Faithfulness

        llm = LangchainLLMWrapper(ChatOpenAI(base_url=base_url, api_key="x", model=JUDGE_MODEL))
        # The context-length check tokenizes with tiktoken, whose encodings are downloaded on first
        # use; without it the texts are sent as they are, which is what the simulator expects
        # anyway.
        if embeddings_from == "simulator":
            backend = OpenAIEmbeddings(
                base_url=base_url,
                api_key="x",
                model=EMBEDDING_MODEL,
                check_embedding_ctx_length=False,
            )
        else:
            backend = _local_langchain_embeddings()
        embeddings = LangchainEmbeddingsWrapper(backend)
    dataset = EvaluationDataset.from_list(
        [
            {
                "user_input": i.question,
                "response": i.answer,
                "retrieved_contexts": i.contexts,
                "reference": i.reference,
            }
            for i in items
        ]
    )
    metrics = [Faithfulness(), AnswerRelevancy(), ContextPrecision(), ContextRecall()]
    fewer = _FewerGenerations()
    prompt_log = logging.getLogger("ragas.prompt.pydantic_prompt")
    prompt_log.addHandler(fewer)
    prompt_log.propagate = (
        False  # counted and reported; one warning line each would break the progress display
    )
    before = served_stats(base_url)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            started = time.perf_counter()
            result = evaluate(
                dataset,
                metrics=metrics,
                llm=llm,
                embeddings=embeddings,
                callbacks=[_ragas_progress_handler(advance)],
                show_progress=False,
            )
            wall = time.perf_counter() - started
    finally:
        prompt_log.removeHandler(fewer)
        prompt_log.propagate = True
    stats = served_stats(base_url)
    frame = result.to_pandas()
    values = {m.name: [float(v) for v in frame[m.name]] for m in metrics}
    nan = {name: sum(1 for v in column if not math.isfinite(v)) for name, column in values.items()}
    return {
        "wall_s": wall,
        "embeddings": embeddings_from,
        **_served(before, stats),
        "max_concurrent": stats["max_concurrent"],
        "nan": nan,
        "nan_total": sum(nan.values()),
        "fewer_generations": fewer.count,
        "means": {
            name: _mean([v for v in column if math.isfinite(v)]) for name, column in values.items()
        },
    }


def run_eval_bench(
    n_items: int = 200,
    latency_s: float = DEFAULT_LATENCY_S,
    capacity: int = 16,
    seed: int = 5,
    ragas_embeddings: Literal["simulator", "local"] = "simulator",
) -> dict:
    """ragwatch's judge, its cached rerun and `ragas.evaluate()` on the same items, each path on a
    fresh simulator with the same knobs (latency and capacity, no faults). `ragas_embeddings`: where
    ragas' embeddings come from (ragwatch's always come from the local model, in-process)."""
    if ragas_embeddings not in ("simulator", "local"):
        raise ValueError(f"ragas_embeddings is 'simulator' or 'local', not {ragas_embeddings!r}")
    items = bench_items(n_items, seed)
    knobs = SimulatorKnobs(latency_s=latency_s, capacity=capacity)
    # Load the embedding model (ours here, the simulator's in its process) before any clock starts.
    LocalEmbedder().embed(["warm up"])
    cache_dir = tempfile.mkdtemp(prefix="ragwatch-bench-eval-")
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    try:
        # Twice a second: each refresh renders on this process's CPU, which the judge being measured
        # needs.
        with Progress(*columns, transient=True, refresh_per_second=2) as bar:

            def items_bar(label: str) -> Callable[[int, int], None]:
                task = bar.add_task(label, total=n_items)
                return lambda done, total: bar.update(task, completed=done, total=total)

            with simulator_process(knobs) as url:
                ours = run_ragwatch(
                    items, url, capacity, cache_dir, items_bar("ragwatch judge (items)")
                )
                rerun = run_ragwatch(
                    items, url, capacity, cache_dir, items_bar("ragwatch rerun, cached (items)")
                )
            with simulator_process(knobs, warm_embeddings=ragas_embeddings == "simulator") as url:
                jobs = bar.add_task(
                    "ragas evaluate() ((item, metric) jobs)", total=n_items * len(METRICS)
                )
                theirs = run_ragas(items, url, lambda: bar.advance(jobs), ragas_embeddings)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    for path in (ours, theirs):
        path["ideal_s"] = _ideal(path["requests"], latency_s, capacity)
        path["efficiency"] = path["ideal_s"] / path["wall_s"] if path["wall_s"] else None
        path["per_item"] = {
            name: path[name] / n_items
            for name in ("requests", "prompt_tokens", "completion_tokens")
        }
        path["prefix_cached_share"] = (
            path["cached_prompt_tokens"] / path["prompt_tokens"] if path["prompt_tokens"] else None
        )
    return {
        "n_items": n_items,
        "latency_s": latency_s,
        "capacity": capacity,
        "seed": seed,
        "metrics": list(METRICS),
        "ragwatch": ours,
        "rerun": {
            "wall_s": rerun["wall_s"],
            "requests": rerun["requests"],
            "cache_hits": rerun["counters"]["cache_hits"],
            "llm_calls": rerun["counters"]["calls"],
            "share": rerun["wall_s"] / ours["wall_s"],
        },
        "ragas": theirs,
        "ratio": ours["wall_s"] / theirs["wall_s"],
    }


def format_eval_bench(result: dict) -> str:
    """A rich table as text: requests, wall, ideal and efficiency per path; failures; the ratios."""
    ours, rerun, theirs = result["ragwatch"], result["rerun"], result["ragas"]

    def seconds(value: float) -> str:
        return f"{value:.2f} s"

    def score(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    def share(value: float | None) -> str:
        return "—" if value is None else f"{value:.0%}"

    def endpoints(path: dict) -> str:
        e = path["endpoints"]
        return f"{e.get('chat/completions', 0)} chat + {e.get('embeddings', 0)} emb."

    title = (
        f"Judge benchmark: {result['n_items']} items × {len(result['metrics'])} metrics on the simulator "
        f"(latency {result['latency_s']:g} s, capacity {result['capacity']})"
    )
    table = Table(title=title)
    ragas_column = f"ragas ({theirs['embeddings']} emb.)"
    for column in ("", "ragwatch (local emb.)", "ragwatch rerun", ragas_column):
        table.add_column(column, justify="right" if column else "left")
    table.add_row(
        "requests served", str(ours["requests"]), str(rerun["requests"]), str(theirs["requests"])
    )
    table.add_row("  of which", endpoints(ours), "", endpoints(theirs))
    table.add_row(
        "requests per item",
        f"{ours['per_item']['requests']:.2f}",
        "",
        f"{theirs['per_item']['requests']:.2f}",
    )
    table.add_row(
        "prompt tokens per item",
        f"{ours['per_item']['prompt_tokens']:,.0f}",
        "",
        f"{theirs['per_item']['prompt_tokens']:,.0f}",
    )
    table.add_row(
        "  of which a prefix cache holds",
        share(ours["prefix_cached_share"]),
        "",
        share(theirs["prefix_cached_share"]),
    )
    table.add_row(
        "completion tokens per item",
        f"{ours['per_item']['completion_tokens']:,.0f}",
        "",
        f"{theirs['per_item']['completion_tokens']:,.0f}",
    )
    table.add_row(
        "LLM calls (our counters)", str(ours["counters"]["calls"]), str(rerun["llm_calls"]), ""
    )
    table.add_row(
        "wall time", seconds(ours["wall_s"]), seconds(rerun["wall_s"]), seconds(theirs["wall_s"])
    )
    table.add_row(
        "ideal: requests × latency ÷ capacity",
        seconds(ours["ideal_s"]),
        "",
        seconds(theirs["ideal_s"]),
    )
    table.add_row(
        "efficiency (ideal ÷ wall)", f"{ours['efficiency']:.0%}", "", f"{theirs['efficiency']:.0%}"
    )
    table.add_row(
        "most requests in flight", str(ours["max_concurrent"]), "", str(theirs["max_concurrent"])
    )
    # Legacy answer relevancy embeds synchronously on ragas' event loop: each embedding request
    # stalls every job for its whole latency, so these seconds are spent one after the other.
    stall = theirs["endpoints"].get("embeddings", 0) * result["latency_s"]
    table.add_row("ragas' loop stalled on embeddings (≥)", "", "", seconds(stall) if stall else "—")
    table.add_section()
    table.add_row("failed scores", str(ours["failed"]), "", f"{theirs['nan_total']} NaN")
    table.add_row(
        "relevancy on fewer questions than asked", "0", "", str(theirs["fewer_generations"])
    )
    for metric in result["metrics"]:
        table.add_row(
            f"mean {metric}", score(ours["means"][metric]), "", score(theirs["means"].get(metric))
        )
    table.add_section()
    table.add_row("wall ÷ ragas' wall", f"{result['ratio']:.2f}", "", "1.00")
    table.add_row(
        "requests ÷ ragas' requests", f"{ours['requests'] / theirs['requests']:.2f}", "", "1.00"
    )
    table.add_row(
        "prompt tokens ÷ ragas' prompt tokens",
        f"{ours['prompt_tokens'] / theirs['prompt_tokens']:.2f}",
        "",
        "1.00",
    )
    table.add_row("rerun wall ÷ first wall", "", f"{rerun['share']:.1%}", "")
    console = Console(file=io.StringIO(), width=110)
    console.print(table)
    return console.file.getvalue()
