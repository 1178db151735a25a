"""End to end: nothing planted survives anonymization, on 1,000 demo traces and 800 adversarial
ones."""

import json
import re
from collections import Counter
from datetime import UTC, datetime

import pytest

from pipelines.core.records import Trace
from pipelines.privacy.anonymizer import Anonymizer
from pipelines.privacy.recognizers import ENTITY_TYPES
from pipelines.privacy.residual import residual_pii_reasons
from pipelines.privacy.spans import base_type
from ragwatch_harness.bench.anonymize import _leaked, trace_texts
from ragwatch_harness.bench.pii import PLACES, generate_pii_cases
from ragwatch_harness.demo.traces import generate_traces

START, END = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 29, tzinfo=UTC)
HARD_NEGATIVES = re.compile(  # UUIDs, order codes, ISO and Spanish dates
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    r"|ORD-2026-\d{6}|\b2026-\d\d-\d\d\b|\b\d\d/\d\d/2026\b"
)


def serialized(trace: Trace) -> str:
    return json.dumps(trace.model_dump(mode="json"), ensure_ascii=False)


@pytest.fixture(scope="module")
def runs():
    labelled = generate_traces(1000, seed=2026, start=START, end=END)
    anonymizer = Anonymizer(b"leak-test-key")
    return [(item, *anonymizer.anonymize_trace(item.trace)) for item in labelled]


def test_the_labelled_set_is_realistic(runs):
    planted = Counter(entity for item, _, _ in runs for entity, _ in item.planted)
    print("\nplanted per type:", dict(sorted(planted.items())))
    assert set(planted) <= set(ENTITY_TYPES) and len(planted) >= 10
    assert min(planted.values()) >= 5
    assert 0.30 <= sum(bool(item.planted) for item, _, _ in runs) / len(runs) <= 0.40
    assert 0.45 <= sum(item.trace.language == "es" for item, _, _ in runs) / len(runs) <= 0.65
    for item, _, _ in runs:  # a label must point at text that is really there
        assert all(value in serialized(item.trace) for _, value in item.planted), (
            item.trace.trace_id
        )


def test_no_planted_value_survives(runs):
    leaks = [
        (entity, value)
        for item, anonymized, _ in runs
        for entity, value in item.planted
        if value in serialized(anonymized)
    ]
    found = sum((counts for _, _, counts in runs), Counter())
    print("\nreplaced per type:", dict(sorted(found.items())))
    assert leaks == []
    planted = Counter(entity for item, _, _ in runs for entity, _ in item.planted)
    assert all(found[entity] >= planted[entity] for entity in planted)


def test_hard_negatives_are_kept(runs):
    kept = [
        (m, anonymized)
        for item, anonymized, _ in runs
        for m in HARD_NEGATIVES.findall(item.trace.question)
    ]
    assert len(kept) >= 20
    assert [m for m, anonymized in kept if m not in anonymized.question] == []


def test_a_second_pass_finds_nothing(runs):
    anonymizer = Anonymizer(b"leak-test-key")
    again = [anonymizer.anonymize_trace(anonymized) for _, anonymized, _ in runs]
    assert sum((counts for _, counts in again), Counter()) == Counter()


def test_generation_is_deterministic():
    first = generate_traces(40, seed=7, start=START, end=END)
    assert first == generate_traces(40, seed=7, start=START, end=END)
    assert first != generate_traces(40, seed=8, start=START, end=END)


# --- the adversarial corpus: every form of PII the anonymizer claims, in every place a trace has
# ---
@pytest.fixture(scope="module")
def adversarial():
    anonymizer = Anonymizer(b"leak-test-key")
    return [
        (case, anonymizer.anonymize_trace(case.trace)[0])
        for case in generate_pii_cases(800, seed=2026)
    ]


def test_the_adversarial_set_is_broad_and_its_labels_are_real(adversarial):
    planted = [p for case, _ in adversarial for p in case.planted]
    assert len(planted) >= 1500 and len({p.form for p in planted}) >= 120
    assert {p.place for p in planted} == set(PLACES) and {p.language for p in planted} == {
        "es",
        "en",
    }
    assert {base_type(p.entity) for p in planted} == {base_type(t) for t in ENTITY_TYPES}
    for case, _ in adversarial:
        texts = trace_texts(case.trace)
        assert all(any(p.value in text for text in texts) for p in case.planted), (
            case.trace.trace_id
        )


def _leaks(adversarial, entity_filter) -> tuple[list, int]:
    leaks, total = [], 0
    for case, anonymized in adversarial:
        before, after = serialized(case.trace), serialized(anonymized)
        for p in case.planted:
            if entity_filter(p.entity):
                total += 1
                if _leaked(json.dumps(p.value, ensure_ascii=False)[1:-1], before, after):
                    leaks.append((p.form, p.place, p.value))
    return leaks, total


def test_no_structured_value_or_secret_survives(adversarial):
    leaks, total = _leaks(adversarial, lambda entity: entity != "PERSON")
    assert total >= 1200 and leaks == []


def test_names_survive_rarely(adversarial):
    leaks, total = _leaks(adversarial, lambda entity: entity == "PERSON")
    print(f"\nnames missed: {len(leaks)} of {total}", leaks)
    assert total >= 175 and 1 - len(leaks) / total >= 0.97


def test_the_residual_check_passes_what_the_anonymizer_wrote_and_flags_raw_values(adversarial):
    flagged = [
        (reasons, text)
        for _, anonymized in adversarial
        for text in trace_texts(anonymized)
        if (reasons := residual_pii_reasons(text))
    ]
    assert flagged == []
    missed = [
        (p.form, p.value)
        for case, _ in adversarial
        for p in case.planted
        if p.entity != "PERSON"
        and not any(
            residual_pii_reasons(text) for text in trace_texts(case.trace) if p.value in text
        )
    ]
    assert missed == []


def test_adversarial_generation_is_deterministic():
    assert generate_pii_cases(30, seed=7) == generate_pii_cases(30, seed=7)
    assert generate_pii_cases(30, seed=7) != generate_pii_cases(30, seed=8)
