"""End to end on 1,000 labelled Spanish/English demo traces: nothing planted survives anonymization."""

import json
import re
from collections import Counter
from datetime import UTC, datetime

import pytest

from pipelines.demo.traces import generate_traces
from pipelines.privacy.anonymizer import Anonymizer
from pipelines.privacy.recognizers import ENTITY_TYPES, RESIDUAL_PII_PATTERNS
from pipelines.records import Trace

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
        assert all(value in serialized(item.trace) for _, value in item.planted), item.trace.trace_id


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


def test_no_residual_pattern_matches_the_output(runs):
    residual = re.compile("|".join(f"(?:{p})" for p in RESIDUAL_PII_PATTERNS.values()))
    assert [a.trace_id for _, a, _ in runs if residual.search(serialized(a))] == []


def test_hard_negatives_are_kept(runs):
    kept = [(m, anonymized) for item, anonymized, _ in runs for m in HARD_NEGATIVES.findall(item.trace.question)]
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
