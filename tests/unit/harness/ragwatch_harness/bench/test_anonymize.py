"""`ragwatch bench anonymize` on a small run: every corpus measured, presidio really run, targets
judged."""

import pytest

pytest.importorskip("presidio_analyzer")

from pipelines.privacy.anonymizer import Anonymizer  # noqa: E402
from ragwatch_harness.bench.anonymize import (  # noqa: E402
    CEILINGS,
    _clean_rates,
    TARGETS,
    format_anonymize_bench,
    run_anonymize_bench,
    target_verdicts,
)
from ragwatch_harness.bench.clean_docs import load_clean_traces  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

CLEAN = load_clean_traces(ROOT / "tests" / "data" / "clean_docs.jsonl.gz")


@pytest.fixture(scope="module")
def result():
    return run_anonymize_bench(n_traces=20, seed=3, clean=CLEAN[:40])


def test_both_sides_are_timed_on_the_same_bytes(result):
    for corpus, n in (("demo", 20), ("adversarial", 20), ("clean", 40)):
        measured = result[corpus]
        assert measured["traces"] == n and measured["megabytes"] > 0
        assert measured["ours_seconds"] > 0 and measured["presidio_seconds"] > 0
        assert measured["speedup"] == pytest.approx(
            measured["presidio_seconds"] / measured["ours_seconds"]
        )


def test_recall_is_per_type_and_presidio_misses_what_it_has_no_recognizer_for(result):
    adversarial = result["adversarial"]
    assert adversarial["forms"] >= 30 and "PERSON" in adversarial["planted"]
    assert set(adversarial["ours_recall"]) == set(adversarial["planted"])
    assert all(0.0 <= rate <= 1.0 for rate in adversarial["ours_recall"].values())
    if "SECRET" in adversarial["planted"]:
        assert (
            adversarial["presidio_recall"]["SECRET"] == 0.0
        )  # no pattern recognizer: no credit given
    assert adversarial["residual_flags_anonymized"] == 0


def test_clean_text_rates_are_per_language_and_per_family(result):
    languages = result["clean"]["languages"]
    assert set(languages) == {"en", "es"} and all(m["traces"] == 20 for m in languages.values())
    for measured in languages.values():
        assert (
            0.0 <= measured["quarantined"] <= measured["replaced"] + measured["quarantined"] <= 2.0
        )
        assert (
            sum(measured["replaced_by_type"].values()) >= measured["replaced"] * measured["traces"]
        )
    assert all(
        m["quarantined"] == 0.0 for m in languages.values()
    )  # the fixture's first 40 pass clean


def test_a_language_without_documentation_fails_the_clean_target_with_a_reason(result):
    english_only = [trace for trace in CLEAN[:40] if trace.language == "en"]
    anonymizer = Anonymizer(b"bench-test-key")
    anonymized, counts = zip(*(anonymizer.anonymize_trace(trace) for trace in english_only))
    rates = _clean_rates(english_only, list(anonymized), [[] for _ in english_only], list(counts))
    assert "manpages-es" in rates["es"]["failed"] and rates["en"]["traces"] == 20
    without_spanish = {**result, "clean": {**result["clean"], "languages": rates}}
    assert target_verdicts(without_spanish)["clean_quarantined"] == (None, False)
    text = format_anonymize_bench(without_spanish)
    assert (
        "es failed: no es documentation" in " ".join(text.split())
        and "clean docs quarantined failed" in text
    )


def test_the_report_judges_each_target(result):
    verdicts = target_verdicts(result)
    assert set(verdicts) == set(TARGETS) | set(CEILINGS)
    for name, (value, met) in verdicts.items():
        assert met == (value >= TARGETS[name] if name in TARGETS else value <= CEILINGS[name])
    text = format_anonymize_bench(result)
    assert "Throughput" in text and "presidio" in text and "Targets:" in text
    assert (
        "Clean documentation" in text and "quarantined" in text and "clean docs quarantined" in text
    )
    assert max(map(len, text.splitlines())) <= 80
