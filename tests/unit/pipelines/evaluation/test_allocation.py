"""The allocation both suites share: an offline eval's `limit` and the online eval's daily
budget."""

from hypothesis import given
from hypothesis import strategies as st

from pipelines.evaluation.allocation import allocate


@given(
    st.dictionaries(st.sampled_from("abcdefg"), st.integers(0, 60), min_size=1),
    st.integers(0, 200),
    st.integers(0, 12),
)
def test_allocation_spends_the_budget_respects_floors_and_only_grows_with_it(
    available, budget, floor
):
    drawn = allocate(available, budget, floor=floor)
    assert sum(drawn.values()) == min(budget, sum(available.values()))
    assert all(0 <= drawn[s] <= available[s] for s in available)
    larger = allocate(available, budget + 7, floor=floor)
    assert all(
        larger[s] >= drawn[s] for s in available
    )  # house monotone: no stratum loses with a larger budget
    if budget >= floor * len(available):
        assert all(drawn[s] >= min(floor, available[s]) for s in available)
