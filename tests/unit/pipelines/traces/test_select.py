import math
import random
import string
from collections import Counter

from pipelines.traces.select import select_traces, selection_key, stratum_target


def population(sizes: dict[tuple, int], seed: int = 1) -> list[tuple]:
    rng = random.Random(seed)
    rows = []
    for stratum, n in sizes.items():
        rows += [("".join(rng.choices(string.ascii_lowercase, k=12)), *stratum) for _ in range(n)]
    rng.shuffle(rows)
    return rows


def counts_of(rows):
    return Counter(tuple(r[1:]) for r in rows)


def test_same_input_selects_same_traces_in_any_row_order():
    rows = population({("docs", "es"): 900, ("bot", "en"): 400})
    first = select_traces(counts_of(rows), rows, rate=0.05, min_per_stratum=2)
    shuffled = list(reversed(rows))
    second = select_traces(counts_of(rows), shuffled, rate=0.05, min_per_stratum=2)
    assert first.trace_ids == second.trace_ids
    assert first.trace_ids == sorted(first.trace_ids)


def test_each_stratum_gets_its_proportional_share():
    sizes = {("docs", "es", 1): 2000, ("docs", "en", 0): 1000, ("bot", "es", -1): 460}
    rows = population(sizes)
    selection = select_traces(counts_of(rows), rows, rate=0.05, min_per_stratum=2)
    by_stratum = {s.stratum: s.selected for s in selection.strata}
    assert by_stratum == {("docs", "es", 1): 100, ("docs", "en", 0): 50, ("bot", "es", -1): 23}
    chosen = set(selection.trace_ids)
    assert counts_of([r for r in rows if r[0] in chosen]) == Counter(by_stratum)


def test_small_strata_are_still_represented():
    rows = population({("docs", "es"): 3000, ("rare", "en"): 5, ("tiny", "es"): 1})
    selection = select_traces(counts_of(rows), rows, rate=0.01, min_per_stratum=2)
    by_stratum = {s.stratum: s.selected for s in selection.strata}
    assert by_stratum[("rare", "en")] == 2
    assert by_stratum[("tiny", "es")] == 1
    assert by_stratum[("docs", "es")] == 30


def test_a_higher_rate_selects_a_superset():
    rows = population({("a",): 1500, ("b",): 300})
    low = select_traces(counts_of(rows), rows, rate=0.05, min_per_stratum=0)
    high = select_traces(counts_of(rows), rows, rate=0.2, min_per_stratum=0)
    assert set(low.trace_ids) < set(high.trace_ids)


def test_selection_keys_are_uniform_enough():
    keys = [selection_key(f"trace-{i}") / 2**64 for i in range(20_000)]
    below = sum(k < 0.05 for k in keys) / len(keys)
    assert math.isclose(below, 0.05, abs_tol=0.006)


def test_target_rounds_half_up_and_respects_floor_and_size():
    assert stratum_target(10, 0.05, 0) == 1  # 0.5 rounds up
    assert stratum_target(29, 0.05, 0) == 1
    assert stratum_target(30, 0.05, 0) == 2
    assert stratum_target(1, 0.05, 2) == 1
    assert stratum_target(1000, 1.0, 2) == 1000
