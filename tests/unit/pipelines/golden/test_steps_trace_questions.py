"""The golden plan's trace questions, read in batches with a bounded pick per stratum, are the
questions the previous loader (every row of every day as a dict, then a full sort) picked."""

from datetime import date, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.core.workspace import Workspace
from pipelines.golden import steps
from pipelines.golden.plan import PRUNE_FACTOR, TraceQuestionSample, pick_trace_questions
from pipelines.golden.steps import recent_trace_questions
from ragwatch_harness.bench.plan import previous_pick, previous_pick_trace_questions, run_plan_bench

WORDS = ["cómo", "configuro", "el", "índice", "how", "do", "I", "rotate", "keys", "?"]
SPACES = [
    " ",
    "  ",
    "\t",
    "\n",
    "\u00a0",
    "\u2003",
]  # str.split() splits on each: the filter counts words the same


@st.composite
def question(draw) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=0, max_size=66))
    return "".join(w + draw(st.sampled_from(SPACES)) for w in words) or draw(
        st.sampled_from(["", " "])
    )


ROW = st.fixed_dictionaries(
    {
        # Few ids: the same trace id (the same rank) comes back in a stratum and across strata and
        # days.
        "trace_id": st.integers(0, 40).map(lambda i: f"tr-{i}"),
        "app": st.sampled_from(["docs-assistant", "support-bot", "internal-search"]),
        "language": st.sampled_from(["es", "en", "und"]),
        "question": question(),
    }
)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(ROW, max_size=120),
    n=st.integers(0, 25),
    cuts=st.lists(st.integers(1, 9), max_size=40),
)
def test_the_bounded_pick_equals_the_full_sort_whatever_the_batches(rows, n, cuts):
    sample = TraceQuestionSample(n)
    start = 0
    for size in [*cuts, len(rows)]:
        batch = rows[start : start + size]
        sample.add(*([r[c] for r in batch] for c in ("trace_id", "app", "language", "question")))
        start += size
    expected = previous_pick_trace_questions(rows, n)
    assert sample.picked() == expected
    assert pick_trace_questions(iter(rows), n) == expected  # rows streamed one by one


def test_memory_grows_with_strata_times_n_not_with_the_rows():
    n, rows = 5, 20_000
    sample = TraceQuestionSample(n)
    for start in range(0, rows, 1_000):
        ids = [f"tr-{i}" for i in range(start, start + 1_000)]
        sample.add(
            ids,
            ["app"] * 1_000,
            [("es", "en")[i % 2] for i in range(start, start + 1_000)],
            ["how do I rotate keys"] * 1_000,
        )
        assert all(len(kept) < PRUNE_FACTOR * n for kept in sample._kept.values())
    assert len(sample.picked()) == n


def _write_day(workspace: Workspace, day: date, rows: list[dict]) -> None:
    data = workspace.traces_partition(day).part(0)
    data.parent.mkdir(parents=True, exist_ok=True)
    # More columns than the plan reads, in small row groups: the read takes four columns, batch by
    # batch.
    table = pa.Table.from_pylist([dict(r, answer="…", latency_ms=12) for r in rows])
    pq.write_table(table, data, row_group_size=3)


def test_the_plans_read_of_a_workspace_equals_the_previous_loader(tmp_path, monkeypatch):
    workspace, until = Workspace(tmp_path), date(2026, 11, 21)
    apps, languages = ["docs-assistant", "support-bot"], ["es", "en"]
    questions = [
        "¿cómo roto las claves del clúster?",
        "hola",
        "how do I rebuild the index after a refresh",
        " ".join(["why"] * 61),
        "¿qué\u00a0significa  el error 42 en la réplica?",
    ]
    for offset in (
        0,
        1,
        2,
        4,
        5,
    ):  # day 3 has no partition; day 0 is the plan's own day and day 5 too old
        day = until - timedelta(days=offset)
        _write_day(
            workspace,
            day,
            [
                {
                    "trace_id": f"tr-{(i * 7 + offset) % 23}"
                    if i % 5
                    else f"tr-{day}-{i}",  # ids repeat across days
                    "app": apps[i % 2],
                    "language": languages[(i // 2) % 2],
                    "question": questions[i % len(questions)],
                }
                for i in range(40)
            ],
        )
    monkeypatch.setattr(steps, "TRACE_READ_BATCH_ROWS", 7)
    for n in (0, 1, 6, 30, 500):
        picked = recent_trace_questions(workspace, until, 4, n)
        assert picked == previous_pick(workspace, until, 4, n)
    # All of days 1, 2 and 4 that the filter keeps (3 questions of 5), nothing of days 0 and 5.
    assert len(picked) == 3 * 24
    assert {p["trace_id"] for p in picked if p["trace_id"].startswith("tr-2026")} == {
        f"tr-{until - timedelta(days=offset)}-{i}" for offset in (1, 2, 4) for i in range(0, 40, 5)
    }
    assert recent_trace_questions(workspace, until, 0, 10) == []


def test_a_tiny_plan_bench_reads_its_days_and_agrees_with_the_previous_loader(tmp_path):
    # Both loaders on the same days (two processes): the scaling to larger days is arithmetic.
    result = run_plan_bench(120, days=2, n=10, previous_rows=500, home=tmp_path / "bench")
    assert (
        result["rows"] == result["previous_rows"] == 120
        and result["days"] == 2
        and result["strata"] > 1
    )
    assert result["same_picks"] and result["bounded"]["picked"] == 10
    for figures in (result["bounded"], result["same_days"]["previous"]):
        assert (
            0 < figures["read_s"] < figures["wall_s"]
            and 30 < figures["peak_rss_mb"] <= figures["tree_peak_rss_mb"]
        )
    assert result["previous_scaled"]["read_s"] == result["same_days"]["previous"]["read_s"]
    assert not (tmp_path / "bench").exists()  # the bench leaves nothing behind
