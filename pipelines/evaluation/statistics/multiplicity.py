"""Corrections for testing many figures at once, and the labels reports name them by."""

from __future__ import annotations

from collections.abc import Sequence

HOLM = "holm"
BENJAMINI_HOCHBERG = "benjamini-hochberg"
WESTFALL_YOUNG = "westfall-young-maxT"
"""The gate's correction: step-down maxT over one randomization of every check
(randomization.FamilyTest)."""

# --- Adjusted p-values ----------------------------------------------------------------------------


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error control under any dependence): with p
    sorted ascending, p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) p_(j)); reject where p̃ ≤ α."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg step-up adjusted p-values (false-discovery-rate control for independent or
    positively dependent tests): with p sorted ascending, p̃_(i) = min_{j ≥ i} min(1, m p_(j) / j);
    reject where p̃ ≤ q."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i], reverse=True)
    adjusted = [0.0] * m
    running = 1.0
    for position, i in enumerate(order):
        rank = m - position
        running = min(running, m * p_values[i] / rank)
        adjusted[i] = min(1.0, running)
    return adjusted
