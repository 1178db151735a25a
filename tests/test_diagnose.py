"""The brief's threshold table as a diagnosis, retrieval first, and per-item failure attribution."""

from __future__ import annotations

import pytest

from pipelines.evaluation.diagnose import ATTRIBUTIONS, THRESHOLDS, diagnose, summarize_attribution
from pipelines.evaluation.retrieval import attribute
from pipelines.evaluation.stats import Aggregate


def agg(metric: str, mean: float, stratum: str = "all", n: int = 200) -> Aggregate:
    return Aggregate(metric, stratum, n, 0, 0, mean, mean - 0.02, mean + 0.02, 0.2)


@pytest.mark.parametrize(("mean", "users_see", "action"), [
    (0.74, "made-up answers", "tighten prompt, ask for citations, lower temperature"),
    (0.75, "occasional hallucination", "raise context precision"),
    (0.849, "occasional hallucination", "raise context precision"),
    (0.85, "healthy", "watch drift"),
])  # fmt: skip
def test_faithfulness_bands_follow_the_brief(mean, users_see, action):
    [finding] = diagnose([agg("faithfulness", mean)])
    assert (finding.users_see, finding.first_action) == (users_see, action)


def test_every_band_of_a_metric_is_disjoint_and_covers_the_scale():
    for metric in {t.metric for t in THRESHOLDS}:
        for value in (0.0, 0.15, 0.5, 0.6, 0.7, 0.75, 0.85, 1.0):
            assert sum(t.contains(value) for t in THRESHOLDS if t.metric == metric) == 1, (metric, value)


def test_retrieval_problems_are_listed_before_generation_problems():
    findings = diagnose([agg("faithfulness", 0.70), agg("answer_relevancy", 0.65), agg("context_precision", 0.55),
                         agg("context_recall", 0.9), agg("noise_delta_f", 0.2), agg("tool_selection_accuracy", 0.8)])
    order = [(f.metric, f.severity) for f in findings]
    assert order == [("context_precision", "problem"), ("faithfulness", "problem"), ("answer_relevancy", "problem"),
                     ("noise_delta_f", "problem"), ("tool_selection_accuracy", "problem"),
                     ("context_recall", "healthy")]  # fmt: skip
    assert findings[0].users_see == "contradictory answers"
    assert "context_precision also low: fix retrieval first" in findings[1].note


def test_a_stratum_is_reported_only_when_worse_than_the_pooled_band():
    findings = diagnose([agg("context_recall", 0.8), agg("context_recall", 0.5, "multi_hop/es", n=30),
                         agg("context_recall", 0.9, "single_hop/es")])  # fmt: skip
    assert [(f.stratum, f.users_see) for f in findings] == [("multi_hop/es", "multi-hop failures"),
                                                             ("all", "no symptom from this metric")]  # fmt: skip


def test_a_large_recall_mrr_gap_says_gold_chunks_rank_low():
    findings = diagnose([agg("recall@5", 0.9), agg("mrr", 0.5)])
    assert any(f.metric == "recall@5" and "rank low" in f.note for f in findings)
    assert not diagnose([agg("recall@5", 0.9), agg("mrr", 0.8)])


def test_attribution_labels_are_counted_and_name_the_stage_to_fix():
    summary = summarize_attribution(["ok"] * 5 + ["retrieval_failure"] * 3 + ["generation_failure", "not_applicable"])
    assert summary.counts == {"ok": 5, "retrieval_failure": 3, "generation_failure": 1, "unknown": 0,
                              "not_applicable": 1}  # fmt: skip
    assert summary.wrong == 4 and summary.share("retrieval_failure") == 0.75
    assert summary.verdict.startswith("retrieval: 3 of 4")
    assert summarize_attribution(["generation_failure"]).verdict.startswith("generation: 1 of 1")
    assert summarize_attribution(["ok", "unknown"]).verdict == "no attributed failures"
    with pytest.raises(ValueError, match="unknown attribution"):
        summarize_attribution(["wrong"])


def test_the_labels_are_those_retrieval_attribute_produces():
    gold = ["c1"]
    produced = {attribute(["c1"], gold, True), attribute(["c2"], gold, False), attribute(["c1"], gold, False),
                attribute(["c1"], gold, None), attribute(["c1"], [], True)}  # fmt: skip
    assert produced == set(ATTRIBUTIONS)
