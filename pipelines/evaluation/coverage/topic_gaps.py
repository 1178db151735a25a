"""Which uncovered topics the golden set misses, and which are the matcher's misses on a covered
subject.

A covered question is matched at the true-match rate (TPR) only, so a subject the golden set covers
also leaves about 1 − TPR of its questions unmatched, and they cluster into a topic just as a
missing subject's questions do. The day's matched questions on the same subject tell the two apart.
Each matched question joins the topic of its language whose questions it is nearest on average (the
average cosine that average linkage merges by), when that is within the topic cut. The topic's
questions are then its own and the joined ones; its matched share, over their traffic, is about
TPR·c + FPR·(1 − c), c the share of the topic covered. It is corrected like the day's level
(correction.py), with the rates of the topic's language (threshold.py measures them per language:
GNOME Help's Italian questions are matched at 0.44–0.71, its Spanish ones at 0.75–0.92). The
topic's gap is (1 − c) × its traffic: the traffic the golden set does not cover.

A covered topic's matched questions are about binomial(n, TPR) over its n distinct questions, the
TPR itself known only as well as the language's user questions tell it: P(as few matched | covered),
beta-binomial with the TPR at its Jeffreys posterior (`as_few_matched`), is its p-value. A day has
tens of topics, and the uncovered list is a screen over all of them: a topic is listed as missed
when its p-value passes Benjamini–Hochberg at 5 % over the day's topics (at most 5 % of the listed
topics covered ones, in expectation). The others are set apart as likely the matcher's misses. On
GNOME Help, each of 7 subjects held back in turn and then added back
(tests/unit/pipelines/evaluation/coverage/test_daily_heldout_help.py), this lists 34 topics on the
days a subject is missing, the largest of them the subject every time, and 6 on the days everything
is covered, none of them the subject. With the TPR held at its estimate (binomial), 43 and 9: six
Italian questions on the battery, none matched, stayed listed after their pages were added back.
Where the rates are unknown nothing is corrected: every topic is listed, its gap its uncovered
traffic.

Memory: the matched questions are described (both signals side by side) BLOCK_ROWS at a time and
compared with their language's topic centroids only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.stats import betabinom, false_discovery_control

from pipelines.evaluation.coverage.clusters import Topic
from pipelines.evaluation.coverage.correction import (
    covered_share,
    day_interval,
    in_language,
    uncorrectable,
)
from pipelines.evaluation.results.coverage import CoverageThreshold, UncoveredCluster

BLOCK_ROWS = 2_048
"""Matched questions described at a time."""
FALSE_DISCOVERY_RATE = 0.05
"""The share of the listed topics that may be covered ones, in expectation."""


def weigh_topics(
    topics: Sequence[Topic],
    matched: np.ndarray,
    languages: Sequence[str],
    weights: np.ndarray,
    describe: Callable[[np.ndarray], np.ndarray],
    *,
    similarity: float,
    threshold: CoverageThreshold,
    day_traces: int,
) -> tuple[list[UncoveredCluster], list[UncoveredCluster]]:
    """The `topics` of the uncovered questions weighed against the `matched` questions (indices into
    the day's distinct questions, with their `languages` and `weights`, the traces each stands for;
    `describe` gives indices' vectors in the topics' space): the topics the golden set misses and
    those likely the matcher's misses, each the largest gap first."""
    joined, joined_traffic = _joined(
        topics, matched, np.asarray(languages), weights, describe, similarity
    )
    weighed = [
        _weighed(t.cluster, int(joined[k]), float(joined_traffic[k]), threshold, day_traces)
        for k, t in enumerate(topics)
    ]
    tested = [k for k, c in enumerate(weighed) if c.covered_q_value is not None]
    if tested:
        adjusted = false_discovery_control([weighed[k].covered_q_value for k in tested])
        for k, q in zip(tested, adjusted):
            weighed[k] = weighed[k].model_copy(update={"covered_q_value": float(q)})
    ranked = sorted(weighed, key=lambda c: (-c.gap_traces, c.cluster_id))
    listed = [
        c.covered_q_value is None or c.covered_q_value <= FALSE_DISCOVERY_RATE for c in ranked
    ]
    return (
        [c for c, missed in zip(ranked, listed) if missed],
        [c for c, missed in zip(ranked, listed) if not missed],
    )


def _joined(
    topics: Sequence[Topic],
    matched: np.ndarray,
    languages: np.ndarray,
    weights: np.ndarray,
    describe: Callable[[np.ndarray], np.ndarray],
    similarity: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per topic, the matched questions that join it and the traffic they stand for."""
    count, traffic = np.zeros(len(topics), dtype=np.int64), np.zeros(len(topics))
    topic_languages = np.array([t.cluster.language for t in topics])
    for language in np.unique(topic_languages):
        own = np.flatnonzero(topic_languages == language)
        centroids = np.stack([topics[k].centroid for k in own])
        candidates = matched[languages[matched] == language]
        for start in range(0, len(candidates), BLOCK_ROWS):
            block = candidates[start : start + BLOCK_ROWS]
            closeness = describe(block) @ centroids.T
            nearest = np.argmax(closeness, axis=1)
            inside = closeness[np.arange(len(block)), nearest] >= similarity
            np.add.at(count, own[nearest[inside]], 1)
            np.add.at(traffic, own[nearest[inside]], weights[block[inside]])
    return count, traffic


def as_few_matched(matched: int, questions: int, rates: CoverageThreshold) -> float:
    """P(at most `matched` of `questions` matched | the topic is covered): beta-binomial, the TPR at
    its Jeffreys posterior over the language's positives. A TPR calibrated on a handful of a
    language's user questions is itself uncertain, and a covered topic's count spreads wider than
    binomial(n, TPR) says: held at its estimate, the test lists covered topics of that language as
    gaps more often than the false discovery rate allows."""
    hits = round(rates.tpr * rates.positives)
    return float(betabinom.cdf(matched, questions, hits + 0.5, rates.positives - hits + 0.5))


def _weighed(
    cluster: UncoveredCluster,
    joined: int,
    joined_traffic: float,
    threshold: CoverageThreshold,
    day_traces: int,
) -> UncoveredCluster:
    """The topic with its matched share, coverage and gap; `covered_q_value` holds its p-value
    until the day's topics are adjusted together."""
    traffic = cluster.estimated_traces + joined_traffic
    matched = joined_traffic / traffic if traffic else 0.0
    questions = cluster.questions + joined
    rates = in_language(threshold, cluster.language)
    if uncorrectable(rates):
        level, low, high, p_value, gap = None, None, None, None, cluster.estimated_traces
    else:
        level = covered_share(matched, rates)
        low, high = day_interval(matched, questions, rates)
        p_value = as_few_matched(joined, questions, rates)
        gap = (1.0 - level) * traffic
    return cluster.model_copy(
        update={
            "matched_questions": joined,
            "matched_share": matched,
            "coverage": level,
            "coverage_ci_low": low,
            "coverage_ci_high": high,
            "covered_q_value": p_value,
            "gap_traces": gap,
            "gap_share": gap / day_traces if day_traces else 0.0,
        }
    )
