"""A trace is whole or quarantined: the span index's rules for spans lost in damaged lines, on real
cut files."""

from __future__ import annotations

import gzip
import json
import random
from datetime import datetime, timedelta, timezone
from itertools import chain

import pytest

from pipelines.stores.trace_sources.span_index import SpanIndex, build_span_index
from pipelines.stores.trace_sources.spans import read_otlp_lines
from ragwatch_harness.bench.otlp_day import trace_spans
from tests.unit.pipelines.stores.trace_sources.test_collector_files import zstd_length_prefixed

DAY = datetime(2026, 11, 20, tzinfo=timezone.utc)
NOON = int((DAY + timedelta(hours=12)).timestamp()) * 10**9


def spans_at(index: int, start_ns: int) -> list[dict]:
    """A GenAI trace (root, retrieval, chat) moved to start at `start_ns`."""
    spans = trace_spans(index, random.Random(index))
    shift = start_ns - min(int(s["startTimeUnixNano"]) for s in spans)
    for span in spans:
        for key in ("startTimeUnixNano", "endTimeUnixNano"):
            span[key] = str(int(span[key]) + shift)
    return spans


def request(spans: list[dict]) -> bytes:
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "docs-bot"}}]}
    return json.dumps(
        {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": spans}]}]}
    ).encode()


@pytest.fixture
def day(tmp_path):
    """Three traces: `named`, whose spans are all in a line cut after its trace id; `lost`, whose
    retrieval span was in that line after the cut (its id unreadable), its other spans whole in
    another file; `far`, an hour away."""
    named, lost, far = (
        spans_at(1, NOON),
        spans_at(2, NOON + 2 * 10**9),
        spans_at(3, NOON + 3_600 * 10**9),
    )
    # Compressors emit whole blocks (zstd: up to 128 KB): a line long enough that a cut one still
    # yields text.
    noise = random.Random(0).randbytes(150_000).hex()
    named[0]["attributes"].append({"key": "app.payload", "value": {"stringValue": noise}})
    retrieval = next(s for s in lost if s["name"].startswith("retrieval"))
    whole = [s for s in lost if s is not retrieval]
    (tmp_path / "a.jsonl").write_bytes(request(whole) + b"\n" + request(far) + b"\n")
    cut_line = request([*named, retrieval])
    cut_at = cut_line.index(f'"traceId": "{retrieval["traceId"]}'.encode()) + 5
    ids = {"named": named[0]["traceId"], "lost": lost[0]["traceId"], "far": far[0]["traceId"]}
    return tmp_path, cut_line, cut_at, ids


def build(folder, names, tmp_path):
    items = chain.from_iterable(read_otlp_lines(folder / name) for name in names)
    counts = build_span_index(
        tmp_path / "index.sqlite", items, DAY, DAY + timedelta(days=1), source="otlp"
    )
    index = SpanIndex(tmp_path / "index.sqlite", source="otlp")
    rows = {
        row["trace_id"]: row.get("source_rejection", (None,))[0]
        for row in index.iter_rows(sorted(ids_of(index)))
    }
    index.close()
    return counts, rows


def ids_of(index: SpanIndex) -> list[str]:
    return [row[0] for row in index.iter_keys([])]


@pytest.mark.parametrize("layout", ["plain", "gzip", "zstd-length-prefixed"])
def test_a_trace_that_lost_a_span_in_a_cut_line_is_quarantined_not_sampled_as_clean(
    day, tmp_path, layout
):
    folder, line, cut_at, ids = day
    # A compressed file is cut too: the line compressed, its last tenth lost (the noise's end, the
    # retrieval span).
    written = {
        "gzip": gzip.compress,
        "zstd-length-prefixed": lambda text: zstd_length_prefixed([text]),
    }
    data = line[:cut_at] if layout == "plain" else written[layout](line + b"\n")
    data = data if layout == "plain" else data[: len(data) * 9 // 10]
    (folder / "b.jsonl").write_bytes(data)
    counts, rows = build(folder, ["a.jsonl", "b.jsonl"], tmp_path)
    assert rows == {
        ids["named"]: "truncated_file",
        ids["lost"]: "incomplete_trace",
        ids["far"]: None,
    }
    assert counts["rejected_incomplete_trace"] == 1 and counts["lines_truncated_file"] == 1
    # The spans whose id is still readable: the named trace's three, or its root alone where the
    # rest was compressed.
    assert counts["spans_lost"] == (3 if layout == "plain" else 1)


def test_without_damage_the_same_traces_are_clean(day, tmp_path):
    folder, *_, ids = day
    counts, rows = build(folder, ["a.jsonl"], tmp_path)
    # Without the cut line the `lost` trace has no retrieval span: it would assemble as clean, with
    # no contexts.
    assert rows == {ids["lost"]: None, ids["far"]: None}
    assert counts["spans_lost"] == 0 and "rejected_incomplete_trace" not in counts


def test_a_whole_unreadable_line_whose_ids_are_all_readable_quarantines_only_those(day, tmp_path):
    folder, *_, ids = day
    broken = request(spans_at(4, NOON + 1)).replace(b'{"stringValue"', b'{"stringValu"', 1)
    (folder / "b.jsonl").write_bytes(broken + b"\n")
    counts, rows = build(folder, ["a.jsonl", "b.jsonl"], tmp_path)
    assert sorted(rows.values(), key=str) == [None, None, "unreadable_line"]
    assert counts["lines_unreadable_line"] == 1 and counts["lost_windows"] == 0
