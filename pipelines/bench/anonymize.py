"""Our anonymizer against presidio-analyzer, side by side in one run, on two labelled corpora.

- demo traces: engineers asking about the demo corpus, PII planted where users put it (realistic mix:
  mostly documentation text, some PII). Throughput here is what a day of traffic costs.
- adversarial cases (`pii_cases`): every trace holds PII in one of 137 forms written to dodge
  filters, in every place a trace carries text. Recall here is what the anonymizer is worth.

Presidio runs with its predefined pattern recognizers only (email, phone, credit card, IBAN, IP,
URL, ES NIF/NIE, US SSN) and a no-op NLP engine, the fastest configuration it has without a model.
Its phone recognizer matches region ES only: that finds Spanish national numbers and every E.164
number, and more regions would only slow it down. Both sides read the same strings (keys included)
and are timed in CPU seconds.

Recall: a planted value is caught when it is gone from the anonymized trace and so is every word of
it that the rest of the trace does not also hold ("Marta Vilaró i Puig" with only "Marta" replaced is
a miss). For presidio, when every occurrence lies inside a span of a recognizer for its type.
"""

from __future__ import annotations

import gc
import io
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from pipelines.bench.pii_cases import generate_pii_cases
from pipelines.demo.traces import generate_traces
from pipelines.privacy.anonymizer import Anonymizer
from pipelines.privacy.recognizers import ENTITY_TYPES
from pipelines.privacy.residual import residual_pii_reasons
from pipelines.privacy.spans import base_type
from pipelines.records import Trace

LANGUAGES = ("en", "es")
TARGETS = {"structured_recall": 1.0, "name_recall": 0.97, "speedup": 10.0}
"""What issue 10 asks on the adversarial corpus: every structured value and secret, 97 % of names, and
ten times presidio's pattern recognizers on a day of traffic (the demo traces)."""


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield key
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def trace_texts(trace: Trace) -> list[str]:
    """Every string the anonymizer reads in a trace, JSON keys included."""
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
        UsSsnRecognizer,
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
        UsSsnRecognizer,
    )
    recognizers = [cls(supported_language=lang) for lang in LANGUAGES for cls in pattern_classes]
    recognizers += [PhoneRecognizer(supported_language=lang, supported_regions=("ES",)) for lang in LANGUAGES]
    nlp_engine = NoOpNlpEngine(models=[{"lang_code": lang, "model_name": "none"} for lang in LANGUAGES])
    nlp_engine.load()
    registry = RecognizerRegistry(recognizers=recognizers, supported_languages=list(LANGUAGES))
    return AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=list(LANGUAGES))


PRESIDIO_ENTITIES = {
    "EMAIL": "EMAIL_ADDRESS",
    "PHONE": "PHONE_NUMBER",
    "CREDIT_CARD": "CREDIT_CARD",
    "IBAN": "IBAN_CODE",
    "IP_ADDRESS": "IP_ADDRESS",
    "URL_SECRET": "URL",
    "DNI": "ES_NIF",
    "NIE": "ES_NIE",
    "SSN": "US_SSN",
}
"""Our types and the presidio recognizer that can cover them (for *_INVALID, the base type's).
PERSON and ADDRESS need NER; SECRET, CIF and NSS have no pattern recognizer."""

_WORD = re.compile(r"[^\W_]{3,}")


def _leaked(value: str, before: str, after: str) -> bool:
    """`value` or a word of it (three characters or more) survives in `after`, the anonymized `before`."""
    if value in after:
        return True
    elsewhere = set(_WORD.findall(before.replace(value, " ")))
    surviving = set(_WORD.findall(after))
    return any(word in surviving for word in _WORD.findall(value) if word not in elsewhere)


def _covered(value: str, text: str, spans: list[tuple[int, int]]) -> bool:
    """Every occurrence of `value` in `text` lies inside one detected span."""
    start = text.find(value)
    while start != -1:
        if not any(a <= start and start + len(value) <= b for a, b in spans):
            return False
        start = text.find(value, start + 1)
    return True


def _timed(progress: Progress, label: str, items: list, work: Callable[[Any], Any]) -> tuple[list, float]:
    """The results of `work` on every item and the CPU seconds it took.

    CPU time is steadier than wall time on a shared machine; the garbage collector is paused, as
    `timeit` does, so that the results kept alive do not bill their collection to the work.
    """
    task = progress.add_task(label, total=len(items))
    results = []
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        for item in items:
            results.append(work(item))
            progress.advance(task)
        return results, time.process_time() - started
    finally:
        gc.enable()


def _dumped(trace: Trace) -> str:
    return json.dumps(trace.model_dump(mode="json"), ensure_ascii=False)


def _as_dumped(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)[1:-1]


def _measure(progress: Progress, name: str, traces: list[Trace], languages: list[str], anonymizer, analyzer) -> dict:
    texts = [trace_texts(trace) for trace in traces]
    megabytes = sum(len(text.encode("utf-8", "surrogatepass")) for trace in texts for text in trace) / 1e6

    def presidio(item: tuple[list[str], str]) -> list[list[tuple[int, str, int]]]:
        trace_strings, language = item
        return [[(r.start, r.entity_type, r.end) for r in analyzer.analyze(t, language=language)] for t in trace_strings]

    anonymized, ours_s = _timed(progress, f"ragwatch, {name}", traces, lambda t: anonymizer.anonymize_trace(t)[0])
    presidio_spans, presidio_s = _timed(progress, f"presidio, {name}", list(zip(texts, languages)), presidio)
    return {
        "traces": len(traces),
        "megabytes": megabytes,
        "texts": texts,
        "anonymized": anonymized,
        "presidio_spans": presidio_spans,
        "ours_seconds": ours_s,
        "presidio_seconds": presidio_s,
        "ours_mb_per_s": megabytes / ours_s,
        "presidio_mb_per_s": megabytes / presidio_s,
        "speedup": presidio_s / ours_s,
    }


def _presidio_caught(entity: str, value: str, texts: list[str], spans: list[list[tuple[int, str, int]]]) -> bool:
    wanted = PRESIDIO_ENTITIES.get(base_type(entity))
    holding = [(text, s) for text, s in zip(texts, spans) if value in text]
    return bool(wanted and holding) and all(
        _covered(value, text, [(a, b) for a, kind, b in s if kind == wanted]) for text, s in holding
    )


def _rates(caught: Counter, planted: Counter) -> dict[str, float]:
    return {entity: caught[entity] / planted[entity] for entity in planted}


def run_anonymize_bench(n_traces: int = 2000, seed: int = 11) -> dict:
    """Throughput and recall per entity type, ours and presidio's, on `n_traces` demo traces and as
    many adversarial traces."""
    end = datetime(2026, 11, 29, tzinfo=UTC)
    demo = generate_traces(n_traces, seed=seed, start=end - timedelta(days=7), end=end)
    cases = generate_pii_cases(n_traces, seed=seed)
    anonymizer = Anonymizer(b"ragwatch-bench-key")
    analyzer = _presidio_analyzer()
    analyzer.analyze("warm up", language="en")
    anonymizer.anonymize_text("warm up: Hola, soy Lucía, 612 345 678", "warm-up", Counter())

    def language(trace: Trace) -> str:
        return trace.language if trace.language in LANGUAGES else "en"

    with Progress(transient=True) as progress:
        on_demo = _measure(progress, "demo traces", [t.trace for t in demo], [language(t.trace) for t in demo], anonymizer, analyzer)
        on_cases = _measure(progress, "adversarial cases", [c.trace for c in cases], [language(c.trace) for c in cases], anonymizer, analyzer)  # fmt: skip

    demo_planted = Counter(entity for labelled in demo for entity, _ in labelled.planted)
    demo_ours = Counter(
        entity
        for labelled, output in zip(demo, on_demo["anonymized"])
        for entity, value in labelled.planted
        if value not in "\x00".join(trace_texts(output))
    )
    demo_presidio = Counter(
        entity
        for labelled, texts, spans in zip(demo, on_demo["texts"], on_demo["presidio_spans"])
        for entity, value in labelled.planted
        if _presidio_caught(entity, value, texts, spans)
    )
    case_planted, case_ours, case_presidio, residual_raw = Counter(), Counter(), Counter(), Counter()
    form_planted, form_caught = Counter(), Counter()
    residual_anonymized = 0
    for case, texts, output, spans in zip(cases, on_cases["texts"], on_cases["anonymized"], on_cases["presidio_spans"]):
        before, after = _dumped(case.trace), _dumped(output)
        residual_anonymized += any(residual_pii_reasons(text) for text in trace_texts(output))
        for planted in case.planted:
            case_planted[planted.entity] += 1
            form_planted[planted.form] += 1
            if not _leaked(_as_dumped(planted.value), before, after):
                case_ours[planted.entity] += 1
                form_caught[planted.form] += 1
            case_presidio[planted.entity] += _presidio_caught(planted.entity, planted.value, texts, spans)
            residual_raw[planted.entity] += any(residual_pii_reasons(text) for text in texts if planted.value in text)
    for measured in (on_demo, on_cases):
        for bulky in ("texts", "anonymized", "presidio_spans"):
            measured.pop(bulky)
    return {
        "n_traces": n_traces,
        "seed": seed,
        "demo": {
            **on_demo,
            "planted": dict(demo_planted),
            "ours_recall": _rates(demo_ours, demo_planted),
            "presidio_recall": _rates(demo_presidio, demo_planted),
        },
        "adversarial": {
            **on_cases,
            "planted": dict(case_planted),
            "forms": len(form_planted),
            "ours_recall": _rates(case_ours, case_planted),
            "presidio_recall": _rates(case_presidio, case_planted),
            "residual_flags_raw": _rates(residual_raw, case_planted),
            "residual_flags_anonymized": residual_anonymized,
            "forms_missed": {form: 1 - form_caught[form] / n for form, n in form_planted.items() if form_caught[form] < n},
        },
    }


def target_verdicts(result: dict) -> dict[str, tuple[float, bool]]:
    """Each target of `TARGETS`, the measured value and whether it is met."""
    recall = result["adversarial"]["ours_recall"]
    structured = min(rate for entity, rate in recall.items() if base_type(entity) != "PERSON")
    names = recall.get("PERSON", 1.0)
    speedup = result["demo"]["speedup"]
    return {
        "structured_recall": (structured, structured >= TARGETS["structured_recall"]),
        "name_recall": (names, names >= TARGETS["name_recall"]),
        "speedup": (speedup, speedup >= TARGETS["speedup"]),
    }


def format_anonymize_bench(result: dict) -> str:
    """Rich tables as text, each within 80 columns: throughput on both corpora, then recall per
    entity type on each corpus, ours and presidio's side by side."""

    def pct(value: float | None) -> str:
        return "—" if value is None else f"{value:.1%}"

    demo, adversarial = result["demo"], result["adversarial"]
    console = Console(file=io.StringIO(), width=80)

    speed = Table(title=f"Throughput (CPU time), {result['n_traces']} traces per corpus, seed {result['seed']}")
    for column in ("corpus", "MB", "ragwatch", "presidio (patterns only)", "speed ratio"):
        speed.add_column(column, justify="left" if column == "corpus" else "right")
    for label, measured in (("demo traces", demo), ("adversarial", adversarial)):
        speed.add_row(label, f"{measured['megabytes']:.2f}", f"{measured['ours_mb_per_s']:.2f} MB/s",
                      f"{measured['presidio_mb_per_s']:.2f} MB/s", f"{measured['speedup']:.1f}×")  # fmt: skip
    console.print(speed)

    for title, measured, residual in (
        ("Recall on demo traces", demo, False),
        (f"Recall on adversarial cases ({adversarial['forms']} forms)", adversarial, True),
    ):
        table = Table(title=title)
        columns = ["", "planted", "ragwatch", "presidio"] + (["residual flags raw"] if residual else [])
        for column in columns:
            table.add_column(column, justify="right" if column else "left")
        for entity in ENTITY_TYPES:
            if entity not in measured["planted"]:
                continue
            theirs = pct(measured["presidio_recall"][entity]) if base_type(entity) in PRESIDIO_ENTITIES else "no recognizer"
            row = [entity, str(measured["planted"][entity]), pct(measured["ours_recall"][entity]), theirs]
            table.add_row(*row, *([pct(measured["residual_flags_raw"][entity])] if residual else []))
        console.print(table)
    flagged = adversarial["residual_flags_anonymized"]
    console.print(f"Residual check over the anonymized adversarial traces: {flagged} of {adversarial['traces']} flagged.")
    missed = sorted(adversarial["forms_missed"].items(), key=lambda item: -item[1])
    if missed:
        console.print("Forms not fully caught: " + ", ".join(f"{form} ({rate:.0%} missed)" for form, rate in missed))
    verdicts = target_verdicts(result)
    (structured, s_ok), (names, n_ok), (speedup, x_ok) = (verdicts[k] for k in ("structured_recall", "name_recall", "speedup"))
    console.print(
        f"Targets: structured types {pct(structured)} (lowest, target 100 %) {'met' if s_ok else 'NOT met'}; "
        f"names {pct(names)} (target ≥ 97 %) {'met' if n_ok else 'NOT met'}; "
        f"speed {speedup:.1f}× presidio on demo traces (target ≥ 10×) {'met' if x_ok else 'NOT met'}.",
        markup=False,
    )
    return console.file.getvalue()
