"""A budget divided among strata: a floor for each, the rest in proportion to their sizes.

One allocation serves every stratified draw of a fixed size (an offline eval's `limit`, the online
eval's daily trace budget), so both keep the same two properties: the same budget always gives the
same counts, and a larger budget gives every stratum at least as many (house monotone, so no Alabama
paradox, unlike largest-remainder rounding).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping


def allocate(available: Mapping[str, int], budget: int, *, floor: int) -> dict[str, int]:
    """How many of each stratum to draw: `budget` units (or all there are), one at a time, each to
    the stratum with the strongest claim: below min(`floor`, its size) with the fewest drawn first,
    so floors are shared evenly when the budget is below their sum; then the largest size / (drawn +
    ½) (Webster's divisor method); ties to the first stratum by name. Every stratum named in
    `available` is in the result."""
    names = sorted(available)
    drawn = dict.fromkeys(names, 0)

    def priority(name: str) -> tuple[bool, int, float]:
        # heapq pops the smallest: the claim, negated.
        below = drawn[name] < min(floor, available[name])
        return not below, drawn[name] if below else 0, -available[name] / (drawn[name] + 0.5)

    # Only the stratum that just drew changes its claim, so a heap keeps this O(budget · log
    # strata).
    heap = [(priority(name), i) for i, name in enumerate(names) if available[name] > 0]
    heapq.heapify(heap)
    for _ in range(min(budget, sum(available.values()))):
        _, i = heapq.heappop(heap)
        drawn[names[i]] += 1
        if drawn[names[i]] < available[names[i]]:
            heapq.heappush(heap, (priority(names[i]), i))
    return drawn
