"""A day of N traces in OTLP/JSON files, sampled from the files as Airflow runs the step: memory and
time.

The day is written as the Collector's file exporter writes it: JSON lines of
ExportTraceServiceRequest, 128 traces' spans a line, each trace a root, a GenAI `retrieval` span
(query text, 5 documents), a `chat` span (input and output messages) and for one trace in five an
`execute_tool` span, spread over the day, in files of 100,000 traces. Then the `select` task
(indexing the files' spans by trace, the day's selection) and the `shard` task (assembling and
anonymizing the selected traces, one worker) each run in a fresh process, whose own peak RSS
(peak_memory.py: VmHWM) is reported. Writing the files is timed apart and is not part of the step.

    python -m ragwatch_harness.bench.otlp_day --traces 1000000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import queue
import random
import resource
import shutil
import tempfile
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ragwatch_harness.bench.peak_memory import own_peak_rss_mb

DAY = date(2026, 11, 20)
TRACES_PER_LINE = 128
TRACES_PER_FILE = 100_000
QUESTIONS = [
    ("en", "How do I rotate the API keys of the {n} cluster without downtime?"),
    ("en", "Which port does the admin console of service {n} listen on?"),
    ("es", "¿Cómo restauro la copia de seguridad número {n} del índice?"),
    ("es", "¿Qué límite de memoria tiene el nodo {n} por defecto?"),
]
ANSWER = "According to the runbook, step {n}: drain the node, rotate the secret, then restart the pods one by one."


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def _span(
    trace_id: str,
    span_id: str,
    parent: str,
    name: str,
    start: int,
    end: int,
    attributes: dict[str, Any],
) -> dict:
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
        "status": {},
    }


def trace_spans(index: int, rng: random.Random) -> list[dict]:
    digest = hashlib.sha256(f"bench-otlp-{index}".encode()).hexdigest()
    trace_id, ids = (
        digest[:32],
        [digest[32 + 16 * k : 48 + 16 * k] for k in range(2)]
        + [hashlib.sha256(digest.encode()).hexdigest()[i : i + 16] for i in (0, 16)],
    )
    start = int(
        (
            datetime.combine(DAY, datetime.min.time(), tzinfo=timezone.utc)
            + timedelta(seconds=rng.uniform(0, 86_399))
        ).timestamp()
        * 1e9
    )
    language, template = QUESTIONS[index % len(QUESTIONS)]
    question = template.format(n=rng.randint(1, 999))
    documents = [
        {"id": f"doc-{rng.randint(1, 20_000)}#{k}", "score": round(0.9 - 0.1 * k, 3)}
        for k in range(5)
    ]
    root_attributes: dict[str, Any] = {"ragwatch.user_feedback": rng.choice((-1, 0, 1))}
    if index % 2:
        root_attributes["ragwatch.language"] = language
    messages = [
        {
            "role": "system",
            "parts": [{"type": "text", "content": "Answer from the contexts only."}],
        },
        {"role": "user", "parts": [{"type": "text", "content": question}]},
    ]
    output = [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": ANSWER.format(n=index % 97)}],
            "finish_reason": "stop",
        }
    ]
    spans = [
        _span(trace_id, ids[0], "", "rag.request", start, start + 900_000_000, root_attributes),
        _span(
            trace_id,
            ids[1],
            ids[0],
            "retrieval docs",
            start + 1_000_000,
            start + 40_000_000,
            {
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.query.text": question,
                "gen_ai.retrieval.documents": json.dumps(documents),
            },
        ),
        _span(
            trace_id,
            ids[2],
            ids[0],
            "chat gen-model",
            start + 41_000_000,
            start + 890_000_000,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gen-model",
                "gen_ai.response.model": "gen-model",
                "gen_ai.input.messages": json.dumps(messages),
                "gen_ai.output.messages": json.dumps(output),
            },
        ),
    ]
    if index % 5 == 0:
        spans.append(
            _span(
                trace_id,
                ids[3],
                ids[0],
                "execute_tool vector_search",
                start + 500_000,
                start + 900_000,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "vector_search",
                    "gen_ai.tool.call.arguments": json.dumps({"query": question, "top_k": 5}),
                },
            )
        )
    return spans


def write_day(folder: Path, traces: int, seed: int = 7) -> int:
    """The day's files; returns their bytes. Each line holds one app's spans, spans of a line in
    shuffled order."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for first_of_file in range(0, traces, TRACES_PER_FILE):
        with open(
            folder / f"traces-{first_of_file // TRACES_PER_FILE:04d}.jsonl", "w", encoding="utf-8"
        ) as out:
            for first in range(
                first_of_file, min(traces, first_of_file + TRACES_PER_FILE), TRACES_PER_LINE
            ):
                app = ("docs-bot", "support-bot", "agent")[first // TRACES_PER_LINE % 3]
                spans = [
                    s
                    for i in range(
                        first, min(traces, first + TRACES_PER_LINE, first_of_file + TRACES_PER_FILE)
                    )
                    for s in trace_spans(i, rng)
                ]
                rng.shuffle(spans)
                request = {
                    "resourceSpans": [
                        {
                            "resource": {
                                "attributes": [
                                    {"key": "service.name", "value": {"stringValue": app}}
                                ]
                            },
                            "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
                        }
                    ]
                }
                line = json.dumps(request, ensure_ascii=False, separators=(",", ":")) + "\n"
                out.write(line)
                written += len(line.encode())
    return written


def _run_step(step: str, settings_json: str, payload: Any, results) -> None:
    """One task in a fresh process, as Airflow runs it: its result, wall time and peak RSS."""
    from pipelines.core.settings import Settings
    from pipelines.traces import steps

    settings = Settings.model_validate_json(settings_json)
    started = time.perf_counter()
    if step == "select":
        result = [
            s.model_dump(mode="json")
            for s in steps.select_trace_sample(settings, DAY, rate=payload)
        ]
    else:
        result = steps.write_trace_shard(
            settings, steps.PlannedShard.model_validate(payload)
        ).model_dump(mode="json")
    # CPU seconds beside the wall time: on a machine shared with other jobs the wall time says more
    # about them.
    cpu = sum(
        getattr(resource.getrusage(who), field)
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        for field in ("ru_utime", "ru_stime")
    )
    results.put(
        {
            "result": result,
            "seconds": round(time.perf_counter() - started, 1),
            "cpu_s": round(cpu, 1),
            "peak_rss_mb": round(own_peak_rss_mb()),
        }
    )


def run_in_process(step: str, settings_json: str, payload: Any) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=_run_step, args=(step, settings_json, payload, results))
    process.start()
    while (
        True
    ):  # a task that dies without its result (its traceback is on stderr) must not hang the bench
        try:
            outcome = results.get(timeout=5)
            break
        except queue.Empty:
            if not process.is_alive():
                raise RuntimeError(
                    f"the {step} task failed with exit code {process.exitcode}"
                ) from None
    process.join()
    if process.exitcode:
        raise RuntimeError(f"the {step} task failed with exit code {process.exitcode}")
    return outcome


def bench_otlp_day(
    traces: int, *, rate: float = 0.05, scratch: Path | None = None
) -> dict[str, Any]:
    from pipelines.core.settings import Settings

    root = Path(scratch or tempfile.mkdtemp(prefix="ragwatch-otlp-bench-"))
    try:
        started = time.perf_counter()
        size = write_day(root / "otlp", traces)
        writing = time.perf_counter() - started
        settings = Settings(
            home=root / "home",
            anonymizer_key="bench-key",
            trace_source="otlp",
            trace_source_path=str(root / "otlp"),
            sample_workers=1,
        )
        select = run_in_process("select", settings.model_dump_json(), rate)
        shards = [
            run_in_process("shard", settings.model_dump_json(), shard) for shard in select["result"]
        ]
        index_bytes = sum(
            p.stat().st_size for p in (root / "home" / "trace-index").glob("*.sqlite")
        )
        return {
            "traces": traces,
            "files_mb": round(size / 2**20),
            "writing_s": round(writing, 1),
            "rate": rate,
            "select": {
                "seconds": select["seconds"],
                "cpu_s": select["cpu_s"],
                "mb_per_s": round(size / 2**20 / select["seconds"], 1),
                "peak_rss_mb": select["peak_rss_mb"],
            },
            "shards": [
                {
                    "seconds": s["seconds"],
                    "cpu_s": s["cpu_s"],
                    "peak_rss_mb": s["peak_rss_mb"],
                    "sampled": s["result"]["sampled"],
                    "quarantined": s["result"]["quarantined"],
                }
                for s in shards
            ],
            "index_mb": round(index_bytes / 2**20),
        }
    finally:
        if scratch is None:
            shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=0.05)
    arguments = parser.parse_args()
    print(json.dumps(bench_otlp_day(arguments.traces, rate=arguments.rate), indent=1))


if __name__ == "__main__":
    main()
