"""A topic of unmatched questions is listed as missed only when its matched neighbours are fewer
than a covered topic's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from pipelines.evaluation.coverage.clusters import Topic
from pipelines.evaluation.coverage.topic_gaps import as_few_matched, weigh_topics
from pipelines.evaluation.results.coverage import (
    CoverageThreshold,
    LanguageRates,
    Representative,
    UncoveredCluster,
)

AXES = np.eye(3)


def topic(name: str, language: str, axis: int, questions: int, traces: float) -> Topic:
    cluster = UncoveredCluster(
        cluster_id=name,
        language=language,
        questions=questions,
        traces=int(traces),
        estimated_traces=traces,
        share=traces / 1_000,
        representatives=[Representative(trace_id=name, app="docs", question=name)],
    )
    return Topic(cluster=cluster, members=np.arange(questions), centroid=AXES[axis])


def rates(tpr: float | None, fpr: float | None, **by_language: tuple[float, float]):
    return CoverageThreshold(
        value=0.5,
        method="calibrated",
        tpr=tpr,
        fpr=fpr,
        positives=200,
        negatives=200,
        by_language=[
            LanguageRates(language=lang, positives=60, negatives=60, tpr=t, fpr=f)
            for lang, (t, f) in by_language.items()
        ],
    )


def weigh(topics, matched_axes: list[int], languages: list[str], threshold):
    """Matched questions lying on the given axes, each asked twice."""
    vectors = AXES[matched_axes]
    return weigh_topics(
        topics,
        np.arange(len(matched_axes)),
        languages,
        np.full(len(matched_axes), 2.0),
        lambda block: vectors[block],
        similarity=0.5,
        threshold=threshold,
        day_traces=1_000,
    )


def test_a_topic_with_a_covered_topics_matched_neighbours_is_set_apart_from_a_gap():
    covered = topic("covered", "en", 0, questions=6, traces=60)
    gap = topic("gap", "en", 1, questions=6, traces=30)
    # 14 matched questions on the covered topic's subject (14 of 20: the TPR), none on the gap's;
    # one on a third subject joins no topic.
    missed, misses = weigh([covered, gap], [0] * 14 + [2], ["en"] * 15, rates(0.7, 0.1))
    assert [c.cluster_id for c in missed] == ["gap"]
    assert [c.cluster_id for c in misses] == ["covered"]
    listed, set_apart = missed[0], misses[0]
    assert (set_apart.matched_questions, listed.matched_questions) == (14, 0)
    # The covered topic's traffic: 60 unmatched + 28 matched; its coverage is the matched share
    # corrected, and its gap what is left of its traffic.
    assert set_apart.matched_share == pytest.approx(28 / 88)
    assert set_apart.coverage == pytest.approx((28 / 88 - 0.1) / 0.6)
    assert set_apart.gap_traces == pytest.approx((1 - set_apart.coverage) * 88)
    # The gap is all its traffic, and what ranks it; its share of the day beside the uncovered one.
    assert listed.coverage == 0.0 and listed.gap_traces == pytest.approx(30)
    assert listed.gap_share == pytest.approx(listed.share) and listed.covered_q_value <= 0.05
    assert set_apart.covered_q_value > 0.05


def test_a_topic_is_weighed_by_its_own_languages_rates():
    # Italian questions are matched at 0.4 only: 4 matched of 10 is what a covered Italian topic
    # has, though far below the pooled 0.8.
    italian = topic("it", "it", 0, questions=6, traces=30)
    gap = topic("gap", "es", 1, questions=8, traces=40)
    missed, misses = weigh(
        [italian, gap], [0] * 4, ["it"] * 4, rates(0.8, 0.1, it=(0.4, 0.05), es=(0.8, 0.1))
    )
    assert [c.cluster_id for c in misses] == ["it"] and [c.cluster_id for c in missed] == ["gap"]
    # The pooled rates would have listed it: 4 of 10 against 0.8.
    pooled, _ = weigh([italian, gap], [0] * 4, ["it"] * 4, rates(0.8, 0.1))
    assert {c.cluster_id for c in pooled} == {"it", "gap"}


def test_without_the_matchers_rates_every_topic_is_listed_with_its_uncovered_traffic():
    topics = [
        topic("a", "en", 0, questions=5, traces=50),
        topic("b", "en", 1, questions=5, traces=20),
    ]
    missed, misses = weigh(topics, [0] * 10, ["en"] * 10, rates(None, None))
    assert [c.cluster_id for c in missed] == ["a", "b"] and misses == []
    assert [c.gap_traces for c in missed] == [50, 20]
    assert all(c.coverage is None and c.covered_q_value is None for c in missed)
    # The matched questions that join are still counted.
    assert missed[0].matched_questions == 10 and missed[0].matched_share == pytest.approx(20 / 70)


def test_a_tpr_measured_on_few_user_questions_makes_a_covered_topics_count_spread_wider():
    def calibrated(positives: int) -> CoverageThreshold:
        return CoverageThreshold(
            value=0.5, method="calibrated", tpr=0.57, fpr=0.1, positives=positives, negatives=50
        )

    # Held at its estimate, 0 of 6 matched is a 0.6 % event for a covered topic; with the TPR from
    # 14 user questions it is 1.7 %, from 70 0.8 %, and from 100,000 the binomial.
    point = binom.cdf(0, 6, 0.57)
    few, some, many = (as_few_matched(0, 6, calibrated(n)) for n in (14, 70, 100_000))
    assert few > some > point and few > 2.5 * point
    assert many == pytest.approx(point, rel=0.01)
    # A topic matched as often as a covered one is no evidence of a gap either way.
    assert as_few_matched(4, 6, calibrated(70)) > 0.5
