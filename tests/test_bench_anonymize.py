"""`ragwatch bench anonymize` on a small run: both corpora measured, presidio really run, targets judged."""

import pytest

pytest.importorskip("presidio_analyzer")

from pipelines.bench.anonymize import TARGETS, format_anonymize_bench, run_anonymize_bench, target_verdicts  # noqa: E402


@pytest.fixture(scope="module")
def result():
    return run_anonymize_bench(n_traces=20, seed=3)


def test_both_sides_are_timed_on_the_same_bytes(result):
    for corpus in ("demo", "adversarial"):
        measured = result[corpus]
        assert measured["traces"] == 20 and measured["megabytes"] > 0
        assert measured["ours_seconds"] > 0 and measured["presidio_seconds"] > 0
        assert measured["speedup"] == pytest.approx(measured["presidio_seconds"] / measured["ours_seconds"])


def test_recall_is_per_type_and_presidio_misses_what_it_has_no_recognizer_for(result):
    adversarial = result["adversarial"]
    assert adversarial["forms"] >= 30 and "PERSON" in adversarial["planted"]
    assert set(adversarial["ours_recall"]) == set(adversarial["planted"])
    assert all(0.0 <= rate <= 1.0 for rate in adversarial["ours_recall"].values())
    if "SECRET" in adversarial["planted"]:
        assert adversarial["presidio_recall"]["SECRET"] == 0.0  # no pattern recognizer: no credit given
    assert adversarial["residual_flags_anonymized"] == 0


def test_the_report_judges_each_target(result):
    verdicts = target_verdicts(result)
    assert set(verdicts) == set(TARGETS)
    for name, (value, met) in verdicts.items():
        assert met == (value >= TARGETS[name])
    text = format_anonymize_bench(result)
    assert "Throughput" in text and "presidio" in text and "Targets:" in text
    assert max(map(len, text.splitlines())) <= 80
