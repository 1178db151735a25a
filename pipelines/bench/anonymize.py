"""Our anonymizer against presidio-analyzer, side by side on the same labelled demo traces.

Presidio runs with its predefined pattern recognizers only (email, phone, credit card, IBAN, IP,
URL, ES NIF/NIE) and a no-op NLP engine, the fastest configuration it has without a model.
Its phone recognizer matches region ES only: that finds Spanish national numbers and every
E.164 number, the same ground ours covers, and more regions would only slow it down.
"""

from __future__ import annotations

import gc
import io
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from pipelines.demo.traces import LabelledTrace, generate_traces
from pipelines.privacy.anonymizer import Anonymizer
from pipelines.privacy.recognizers import ENTITY_TYPES
from pipelines.records import Trace

LANGUAGES = ("en", "es")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def trace_texts(trace: Trace) -> list[str]:
    """Every free-text string the anonymizer reads in a trace."""
    return [
        trace.question,
        trace.answer,
        *(c.text for c in trace.contexts),
        *(s for call in trace.tool_calls for s in _strings(call.arguments)),
        *_strings(trace.metadata),
    ]


def _presidio_analyzer():
    """Presidio's predefined pattern recognizers for en and es over an NLP engine that loads no model."""
    import tldextract.tldextract
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NoOpNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        EsNieRecognizer,
        EsNifRecognizer,
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UrlRecognizer,
    )

    # Presidio validates e-mail domains with tldextract, which would fetch the public suffix list
    # over the network; the snapshot bundled with tldextract is enough and keeps the run offline.
    tldextract.tldextract.TLD_EXTRACTOR.suffix_list_urls = ()

    pattern_classes = (
        EmailRecognizer,
        CreditCardRecognizer,
        IbanRecognizer,
        IpRecognizer,
        UrlRecognizer,
        EsNifRecognizer,
        EsNieRecognizer,
    )
    recognizers = [cls(supported_language=lang) for lang in LANGUAGES for cls in pattern_classes]
    recognizers += [PhoneRecognizer(supported_language=lang, supported_regions=("ES",)) for lang in LANGUAGES]
    nlp_engine = NoOpNlpEngine(models=[{"lang_code": lang, "model_name": "none"} for lang in LANGUAGES])
    nlp_engine.load()
    registry = RecognizerRegistry(recognizers=recognizers, supported_languages=list(LANGUAGES))
    return AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=list(LANGUAGES))


def _covered(value: str, text: str, spans: list[tuple[int, int]]) -> bool:
    """Every occurrence of `value` in `text` lies inside one detected span."""
    start = text.find(value)
    while start != -1:
        if not any(a <= start and start + len(value) <= b for a, b in spans):
            return False
        start = text.find(value, start + 1)
    return True


PRESIDIO_ENTITIES = {
    "EMAIL": "EMAIL_ADDRESS",
    "PHONE": "PHONE_NUMBER",
    "CREDIT_CARD": "CREDIT_CARD",
    "IBAN": "IBAN_CODE",
    "IP_ADDRESS": "IP_ADDRESS",
    "URL_SECRET": "URL",
    "DNI": "ES_NIF",
    "NIE": "ES_NIE",
}
"""Our types and the presidio recognizer that can cover them; PERSON needs NER, SECRET has none."""


def _recall(found: Counter, planted: Counter) -> dict[str, float | None]:
    return {t: (found[t] / planted[t] if planted[t] else None) for t in ENTITY_TYPES}


def _timed(
    progress: Progress, label: str, traces: list[LabelledTrace], work: Callable[[LabelledTrace], Any]
) -> tuple[list, float]:
    """The results of `work` on every trace and the CPU seconds it took.

    CPU time is steadier than wall time on a shared machine; the garbage collector is paused, as
    `timeit` does, so that the results kept alive do not bill their collection to the work.
    """
    task = progress.add_task(label, total=len(traces))
    results = []
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        for labelled in traces:
            results.append(work(labelled))
            progress.advance(task)
        return results, time.process_time() - started
    finally:
        gc.enable()


def run_anonymize_bench(n_traces: int = 2000, seed: int = 11) -> dict:
    """Throughput (MB/s of trace text) and recall per entity type, ours and presidio's."""
    end = datetime(2026, 11, 29, tzinfo=UTC)
    traces = generate_traces(n_traces, seed=seed, start=end - timedelta(days=7), end=end)
    texts = [trace_texts(labelled.trace) for labelled in traces]
    megabytes = sum(len(text.encode()) for trace in texts for text in trace) / 1e6
    planted = Counter(entity for labelled in traces for entity, _ in labelled.planted)
    anonymizer = Anonymizer(b"ragwatch-bench-key")
    analyzer = _presidio_analyzer()
    analyzer.analyze("warm up", language="en")

    def presidio(labelled: LabelledTrace) -> list[list[tuple[int, int]]]:
        language = labelled.trace.language if labelled.trace.language in LANGUAGES else "en"
        return [[(r.start, r.end) for r in analyzer.analyze(t, language=language)] for t in trace_texts(labelled.trace)]

    with Progress(transient=True) as progress:
        anonymized, ours_s = _timed(
            progress, "ragwatch anonymizer", traces, lambda t: anonymizer.anonymize_trace(t.trace)[0]
        )
        presidio_spans, presidio_s = _timed(progress, "presidio (patterns only)", traces, presidio)
    # Found: gone from our output; for presidio, every occurrence inside a span it detected.
    ours_found = Counter(
        entity
        for labelled, output in zip(traces, anonymized)
        for entity, value in labelled.planted
        if value not in "\x00".join(trace_texts(output))
    )
    presidio_found = Counter(
        entity
        for labelled, trace_text, trace_spans in zip(traces, texts, presidio_spans)
        for entity, value in labelled.planted
        if all(_covered(value, text, spans) for text, spans in zip(trace_text, trace_spans))
    )
    return {
        "n_traces": n_traces,
        "seed": seed,
        "megabytes": megabytes,
        "planted": dict(planted),
        "ours_seconds": ours_s,
        "presidio_seconds": presidio_s,
        "ours_mb_per_s": megabytes / ours_s,
        "presidio_mb_per_s": megabytes / presidio_s,
        "speedup": presidio_s / ours_s,
        "ours_recall": _recall(ours_found, planted),
        "presidio_recall": _recall(presidio_found, planted),
    }


def format_anonymize_bench(result: dict) -> str:
    """A rich table as text: recall per entity type, then throughput and the speed ratio."""

    def pct(value: float | None) -> str:
        return "—" if value is None else f"{value:.1%}"

    title = f"Anonymizer benchmark: {result['n_traces']} demo traces, {result['megabytes']:.1f} MB of text (CPU time)"
    table = Table(title=title)
    for column in ("", "planted", "ragwatch", "presidio (patterns only)"):
        table.add_column(column, justify="right" if column else "left")
    for entity in ENTITY_TYPES:
        if result["planted"].get(entity):
            theirs = pct(result["presidio_recall"][entity]) + (
                "" if entity in PRESIDIO_ENTITIES else " (no recognizer)"
            )
            table.add_row(
                f"recall {entity}", str(result["planted"][entity]), pct(result["ours_recall"][entity]), theirs
            )
    table.add_section()
    table.add_row("throughput", "", f"{result['ours_mb_per_s']:.2f} MB/s", f"{result['presidio_mb_per_s']:.2f} MB/s")
    table.add_row("speed ratio", "", f"{result['speedup']:.1f}×", "1.0×")
    console = Console(file=io.StringIO(), width=110)
    console.print(table)
    return console.file.getvalue()
