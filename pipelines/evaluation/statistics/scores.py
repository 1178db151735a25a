"""The score rows every statistic reads, and what a metric's scores mean: its stratum, direction and
range."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np

OVERALL = "all"
"""The stratum that pools every item of a run."""

LOWER_IS_BETTER = frozenset({"noise_delta_f", "ragas_noise_sensitivity"})
"""Metrics where a rise is the regression; every other metric is better when higher."""

SCORE_RESOLUTION = 1e-6
"""A paired difference smaller than this is no change. Scores computed from float32 vectors (answer
relevancy's cosines) differ in their last bits between two runs of the same texts, since a vector's
rounding depends on which texts shared its forward pass (measured: about 1e-7). Counted as changes,
such items would join the sign-flip patterns and split the observed statistic's ties, and widen or
narrow a paired interval's pseudo-pairs (whose size is the largest difference seen), so the gate's
p-values and intervals would depend on how requests were batched. No metric here has a meaningful
difference this small."""

METRIC_RANGES: dict[str, tuple[float, float]] = {
    "faithfulness": (0.0, 1.0),
    "answer_relevancy": (0.0, 1.0),
    "context_precision": (0.0, 1.0),
    "context_precision_ranked": (0.0, 1.0),
    "context_recall": (0.0, 1.0),
    "ragas_noise_sensitivity": (0.0, 1.0),
    "noise_delta_f": (-1.0, 1.0),
    "noise_delta_f_reference": (-1.0, 1.0),
    "noise_delta_f_control": (-1.0, 1.0),
    "tool_selection_accuracy": (0.0, 1.0),
    "tool_call_accuracy": (0.0, 1.0),
    "tool_call_validity": (0.0, 1.0),
    "mrr": (0.0, 1.0),
}
"""The nominal range of each metric; `recall@k` and `precision@k` are on [0, 1] too. A score outside
its nominal range (a cosine below 0 in answer relevancy) widens the range to include it."""
_RETRIEVAL_AT_K = re.compile(r"^(recall|precision)@\d+$")


class ScoreLike(Protocol):
    item_id: str
    stratum: str
    metric: str
    value: float | None
    status: str


def value_range(
    metric: str, values: Sequence[float] | np.ndarray = ()
) -> tuple[float, float] | None:
    """The range the metric's mean lives on: its nominal range widened to the values seen, [0, 1]
    for an unknown metric whose values all lie in it, None (range unknown) otherwise."""
    data = np.asarray(values, dtype=float)
    nominal = METRIC_RANGES.get(metric) or ((0.0, 1.0) if _RETRIEVAL_AT_K.match(metric) else None)
    if nominal is None:
        if data.size and (data.min() < 0.0 or data.max() > 1.0):
            return None
        nominal = (0.0, 1.0)
    if not data.size:
        return nominal
    return min(nominal[0], float(data.min())), max(nominal[1], float(data.max()))


def score_change(candidate, baseline) -> np.ndarray:
    """candidate − baseline, item by item, 0 where it is within SCORE_RESOLUTION."""
    d = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    return np.where(np.abs(d) > SCORE_RESOLUTION, d, 0.0)


def ok_values(rows: Iterable[ScoreLike]) -> list[float]:
    return [ok_value(r) for r in rows if r.status == "ok"]


def ok_value(row: ScoreLike) -> float:
    if row.value is None or not math.isfinite(row.value):
        raise ValueError(f"score {row.metric} of item {row.item_id} is ok but has no finite value")
    return float(row.value)


def _by_item(scores: Iterable[ScoreLike], metric: str) -> dict[str, ScoreLike]:
    by_item: dict[str, ScoreLike] = {}
    for s in scores:
        if s.metric != metric:
            continue
        if s.item_id in by_item:
            raise ValueError(f"item {s.item_id} has two {metric} scores in one run")
        by_item[s.item_id] = s
    return by_item


def ok_by_item(scores: Iterable[ScoreLike], metric: str) -> dict[str, float]:
    return {i: ok_value(s) for i, s in _by_item(scores, metric).items() if s.status == "ok"}
