"""The vectors topics are cut in: every match signal's vectors side by side."""

from __future__ import annotations

import numpy as np

from pipelines.evaluation.coverage.signal import MatchSignal, side_by_side
from pipelines.evaluation.results.coverage import CoverageThreshold


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_two_rows_cosine_side_by_side_is_the_mean_of_their_cosines_in_each_signal():
    rng = np.random.default_rng(3)
    embedding, lexical = rng.normal(size=(2, 8)), 5.0 * rng.random(size=(2, 30))
    joined = side_by_side([embedding, lexical])
    assert np.allclose(np.linalg.norm(joined, axis=1), 1.0)
    expected = (cosine(*embedding) + cosine(*lexical)) / 2
    assert np.isclose(joined[0] @ joined[1], expected)


def test_a_question_sharing_nothing_with_the_golden_passages_keeps_its_embedding():
    # A lexical zero row (no n-gram in common) stays zero rather than dividing by zero; the
    # embedding still places it.
    joined = side_by_side([np.array([[3.0, 4.0]]), np.zeros((1, 5))])
    assert (
        np.isfinite(joined).all()
        and np.allclose(joined[0, :2], [0.6, 0.8])
        and not joined[0, 2:].any()
    )


def test_describe_reuses_what_the_chosen_signal_already_placed():
    calls = []

    def chosen(texts, languages, what):
        calls.append(("chosen", what))
        return np.ones((len(texts), 2))

    def other(texts, languages, what):
        calls.append(("other", what))
        return np.ones((len(texts), 3))

    signal = MatchSignal(
        threshold=CoverageThreshold(method="setting", value=0.5),
        place=chosen,
        passage_vectors=np.ones((1, 2)),
        evidence_vectors=np.ones((1, 2)),
        places=(chosen, other),
        evidence_topic_vectors=np.ones((1, 5)),
    )
    described = signal.describe(["q"], ["es"], "uncovered questions", placed=np.array([[1.0, 0.0]]))
    assert calls == [("other", "uncovered questions")] and described.shape == (1, 5)
    signal.describe(["q"], ["es"], "golden questions")
    assert calls[1:] == [("chosen", "golden questions"), ("other", "golden questions")]
