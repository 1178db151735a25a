"""How a score is written for people, the same in the HTML report, the Airflow page and the CLI."""

from __future__ import annotations


def number(value: float | None, digits: int = 3) -> str:
    """`0.812`, or `–` when there is no value (a metric that failed everywhere is not 0)."""
    return "–" if value is None else f"{value:.{digits}f}"


def interval(low: float | None, high: float | None, digits: int = 3) -> str:
    """`[0.751, 0.864]`, or `–` when no interval could be computed."""
    return "–" if low is None or high is None else f"[{low:.{digits}f}, {high:.{digits}f}]"
