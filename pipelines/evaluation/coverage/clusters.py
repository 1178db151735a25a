"""Topics the golden set misses: the day's distinct uncovered questions, clustered per language.

Average-linkage agglomerative clustering (scikit-learn's) on cosine distance, cut at 1 − the topic
similarity (topic_cut.py calibrates it on the golden set's documents).

The unit is the distinct question (estimate.py): a question asked six times is one question of
weight six, so a repeated question cannot make a topic of its own; `min_cluster_size` counts
distinct questions. (HDBSCAN was tried first: on a day's traffic it returns each repeated question
as its own dense cluster rather than their topic, and scikit-learn 1.9's
`cluster_selection_epsilon`, the usual remedy, fails in its tree search.)

Average linkage holds a distance matrix: each language clusters at most MAX_CLUSTERED questions (the
smallest hashes of their trace ids, a rerun takes the same), 3,000² distances being 72 MB. A topic's
volume is the day's traffic its questions stand for (each question weighs the traces it was asked in
times its stratum's day traces / embedded traces, scaled up when the language was subsampled); its
three representatives are the distinct questions nearest its centroid; its id is a hash of its
members' trace ids, the same on a rerun of the day. Each topic keeps its members and centroid:
topic_gaps.py finds the day's matched questions that lie in it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.cluster import AgglomerativeClustering

from pipelines.evaluation.results.coverage import Representative, UncoveredCluster

REPRESENTATIVES = 3
MAX_CLUSTERED = 3_000


@dataclass(frozen=True)
class Topic:
    cluster: UncoveredCluster
    members: np.ndarray
    """Indices of its questions in the rows clustered."""
    centroid: np.ndarray
    """The mean of its members' vectors: a vector's dot product with it is its average cosine to
    them, what average linkage merges by."""


def cluster_uncovered(
    vectors: np.ndarray,
    rows: Sequence[dict],
    weights: np.ndarray,
    *,
    similarity: float,
    day_traces: int,
    min_cluster_size: int,
) -> list[Topic]:
    """`rows` (trace_id, app, language, question, traces) of the distinct uncovered questions with
    their normalised `vectors` and `weights` (the day's traces each stands for): their topics, the
    largest (by traffic) first."""
    languages = np.array([r["language"] for r in rows])
    clusters = []
    for language in np.unique(languages):
        # A question sharing nothing with the golden passages (the lexical signal: no n-gram in
        # common) has no direction to group it by, and the cosine metric refuses a zero vector: it
        # stays unclustered.
        members = np.flatnonzero((languages == language) & (np.abs(vectors).sum(axis=1) > 0))
        scale = 1.0
        if len(members) > MAX_CLUSTERED:
            by_hash = sorted(
                members, key=lambda i: hashlib.sha256(rows[i]["trace_id"].encode()).digest()
            )
            kept = np.sort(by_hash[:MAX_CLUSTERED])
            scale, members = weights[members].sum() / weights[kept].sum(), kept
        if len(members) < min_cluster_size:
            continue
        labels = AgglomerativeClustering(
            n_clusters=None, metric="cosine", linkage="average", distance_threshold=1.0 - similarity
        ).fit_predict(vectors[members])
        for label in np.unique(labels):
            chosen = members[labels == label]
            if len(chosen) >= min_cluster_size:
                clusters.append(
                    _topic(vectors, rows, weights * scale, chosen, str(language), day_traces)
                )
    return sorted(clusters, key=lambda t: (-t.cluster.estimated_traces, t.cluster.cluster_id))


def _topic(
    vectors: np.ndarray,
    rows: Sequence[dict],
    weights: np.ndarray,
    chosen: np.ndarray,
    language: str,
    day_traces: int,
) -> Topic:
    centroid = vectors[chosen].mean(axis=0)
    by_closeness = chosen[np.argsort(-(vectors[chosen] @ centroid), kind="stable")]
    representatives, seen = [], set()
    for i in by_closeness:
        if rows[i]["question"] not in seen:
            seen.add(rows[i]["question"])
            representatives.append(
                Representative(
                    trace_id=rows[i]["trace_id"], app=rows[i]["app"], question=rows[i]["question"]
                )
            )
        if len(representatives) == REPRESENTATIVES:
            break
    digest = hashlib.sha256(
        "\n".join(sorted(rows[i]["trace_id"] for i in chosen)).encode()
    ).hexdigest()
    estimated = float(weights[chosen].sum())
    cluster = UncoveredCluster(
        cluster_id=f"topic-{digest[:10]}",
        language=language,
        questions=len(chosen),
        traces=int(sum(rows[i].get("traces", 1) for i in chosen)),
        estimated_traces=estimated,
        share=estimated / day_traces if day_traces else 0.0,
        representatives=representatives,
    )
    return Topic(cluster=cluster, members=chosen, centroid=centroid)
