"""Where the day's uncovered questions are cut into topics, calibrated on the golden set's
documents.

A topic is what a person would call one subject: what one document of the corpus is about. So the
cut (the average cosine at which clusters.py stops merging) is the one at which average-linkage
clusters of the golden questions best match their documents, by adjusted Rand index over cuts 0.10,
0.15, … 0.90. User questions (golden items from traces or human imports) are used when there are at
least MIN_USER_QUESTIONS of them, the golden set's generated questions otherwise (their wording
shared with their passage makes same-document questions look closer than a user's would; the report
says which it was). When no cut recovers the documents (adjusted Rand index below MIN_ADJUSTED_RAND)
the cut is a default and the report says the topics are rough. A fixed cut halfway between "the
same question" and "another document's question" splits one subject into many topics (on 29
Python-docs pages: 16 questions on extending Python in C become 14 topics).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from sklearn.cluster import AgglomerativeClustering
from sklearn.metrics import adjusted_rand_score

from pipelines.evaluation.results.coverage import TopicCut

CUTS = tuple(round(0.10 + 0.05 * k, 2) for k in range(17))
"""Candidate topic similarities, 0.10 to 0.90."""
MIN_USER_QUESTIONS = 20
"""Fewest user questions (in documents with at least two) to calibrate the cut on them rather than
on generated ones."""
MAX_CALIBRATION = 600
"""Golden questions per language the cut is calibrated on (the smallest hashes of their ids): 17
clusterings each."""
DEFAULT_SIMILARITY = 0.5
"""The cut when the golden set cannot calibrate one (too few documents, or no cut that recovers
them)."""
MIN_ADJUSTED_RAND = 0.1
"""Below this, no cut's clusters resemble the documents (the model does not group the language's
questions by subject, e.g. the English-only local model on the French FAQ: 0.01): the cut is the
default, and says so."""


def subsample(items: Sequence) -> list:
    """At most MAX_CALIBRATION golden items a language, the smallest hashes of their ids (a rerun
    takes the same): what the cut is calibrated on, picked before anything is embedded."""
    by_language: dict[str, list] = {}
    for item in sorted(items, key=lambda i: hashlib.sha256(i.item_id.encode()).digest()):
        kept = by_language.setdefault(item.language, [])
        if len(kept) < MAX_CALIBRATION:
            kept.append(item)
    return [i for kept in by_language.values() for i in kept]


def calibrate_topic_cut(
    vectors: np.ndarray,
    documents: Sequence[str],
    languages: Sequence[str],
    keys: Sequence[str],
    *,
    calibrated_on: str,
) -> TopicCut:
    """The cut whose clusters of golden questions (normalised `vectors`) best match their
    `documents`, pooled over languages (each language's adjusted Rand index weighted by its
    questions); `keys` (item ids) pick the subsample."""
    documents, languages = np.asarray(documents), np.asarray(languages)
    groups = []
    for language in np.unique(languages):
        # A zero vector (a question sharing no n-gram with the golden passages) has no cosine to
        # cluster by.
        members = np.flatnonzero((languages == language) & (np.abs(vectors).sum(axis=1) > 0))
        members = np.array(
            sorted(members, key=lambda i: hashlib.sha256(keys[i].encode()).digest())[
                :MAX_CALIBRATION
            ]
        )
        labels, counts = np.unique(documents[members], return_counts=True)
        if (counts >= 2).sum() >= 2:
            groups.append(members)
    if not groups:
        return TopicCut(
            similarity=DEFAULT_SIMILARITY,
            method="default",
            note="the golden set has no two documents with two questions each to calibrate on",
        )
    scores = []
    for cut in CUTS:
        total = 0.0
        for members in groups:
            found = AgglomerativeClustering(
                n_clusters=None, metric="cosine", linkage="average", distance_threshold=1.0 - cut
            ).fit_predict(vectors[members])
            total += len(members) * adjusted_rand_score(documents[members], found)
        scores.append(total / sum(len(m) for m in groups))
    best = int(np.argmax(scores))
    used = np.concatenate(groups)
    common = dict(
        calibrated_on=calibrated_on,
        questions=len(used),
        documents=len(set(documents[used])),
        adjusted_rand=float(scores[best]),
    )
    if scores[best] < MIN_ADJUSTED_RAND:
        return TopicCut(
            similarity=DEFAULT_SIMILARITY,
            method="default",
            **common,
            note=f"no cut groups the golden set's {calibrated_on} by document (best adjusted Rand index "
            f"{scores[best]:.2f} < {MIN_ADJUSTED_RAND}): the match signal does not tell their "
            "subjects apart, and topics are rough",
        )
    return TopicCut(similarity=CUTS[best], method="calibrated", **common)
