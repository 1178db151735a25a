"""Work split into batches by index range: what mapped Airflow tasks and progress bars iterate over."""

from __future__ import annotations


def batch_ranges(n: int, size: int) -> list[tuple[int, int]]:
    """`[(0, size), (size, 2·size), …, (…, n)]`: half-open ranges covering 0..n, each at most `size` long."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, not {size}")
    return [(start, min(start + size, n)) for start in range(0, n, size)]
