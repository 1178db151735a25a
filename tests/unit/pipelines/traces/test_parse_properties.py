"""Properties of the trace parser over rows hypothesis makes up, as a careless trace store holds
them.

- whatever a row holds (missing fields, wrong types, broken JSON, odd timestamps, any unicode), the
  parser returns a Trace or a Rejection with a known reason: it never raises, so one row never
  blocks a day;
- a Trace written to the store as the demo writes it parses back to itself;
- a timestamp with any UTC offset lands on the same instant, in UTC.

Run with `--hypothesis-show-statistics` to see how many inputs each property tried.
"""

import json
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.core.records import Context, ToolCall, Trace
from pipelines.stores.traces import TRACE_FIELDS as FIELDS
from pipelines.traces.parse import Rejection, parse_row

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=300)
REASONS = {"missing_field", "invalid_json", "field_too_large", "bad_timestamp", "invalid_value"}

# Any character a database can hold: every category but lone surrogates, which no UTF-8 text column
# stores (and which pydantic refuses before a Trace exists).
text = st.text(st.characters(codec=None, exclude_categories=("Cs",)), max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
timestamps = st.datetimes(
    min_value=datetime(1970, 1, 2),
    max_value=datetime(2100, 1, 1),
    # ISO 8601 offsets are whole minutes (Python 3.11's fromisoformat silently drops a sub-second
    # offset part).
    timezones=st.none()
    | st.builds(
        timezone, st.integers(-23 * 60, 23 * 60).map(lambda minutes: timedelta(minutes=minutes))
    ),
)
cell = st.one_of(
    st.none(),
    text,
    st.integers(),
    st.floats(),
    timestamps,
    timestamps.map(str),
    timestamps.map(datetime.isoformat),
    json_values.map(lambda value: json.dumps(value, ensure_ascii=False)),
)
"""What a column of a trace store may hold: nothing, text, numbers, timestamps, JSON of any
shape."""


@SETTINGS
@given(st.dictionaries(st.sampled_from(FIELDS) | text, cell, max_size=len(FIELDS) + 2))
def test_any_row_parses_or_is_rejected_for_a_known_reason(row):
    parsed = parse_row(row, max_field_chars=30)
    assert isinstance(parsed, (Trace, Rejection))
    if isinstance(parsed, Rejection):
        assert parsed.reason in REASONS and parsed.detail
    else:
        assert parsed.ts.utcoffset() == timedelta(0) and parsed.question.strip()


contexts = st.lists(
    st.builds(Context, chunk_id=text.filter(bool), text=text, score=st.floats(-1, 1)), max_size=3
)
tool_calls = st.lists(
    st.builds(
        ToolCall, name=text.filter(bool), arguments=st.dictionaries(text, json_values, max_size=3)
    ),
    max_size=2,
)
traces = st.builds(
    Trace,
    trace_id=text.filter(bool),
    ts=timestamps.filter(lambda ts: ts.tzinfo is not None),
    question=text.filter(str.strip),
    answer=text,
    contexts=contexts,
    tool_calls=tool_calls,
    model=st.none() | text,
    app=text,
    language=text,
    user_feedback=st.sampled_from([None, -1, 0, 1]),
    latency_ms=st.none() | st.integers(0, 10**6),
    metadata=st.dictionaries(text, json_values, max_size=3),
)


def as_store_row(trace: Trace) -> dict:
    """A Trace as the trace store holds it: JSON columns as text (what `demo.traces` writes)."""
    row = trace.model_dump(mode="python")
    for key in ("contexts", "tool_calls", "metadata"):
        row[key] = json.dumps(row[key], ensure_ascii=False)
    return row


@SETTINGS
@given(traces)
def test_a_trace_written_to_the_store_parses_back_to_itself(trace):
    assert parse_row(as_store_row(trace), max_field_chars=10**6) == trace


@SETTINGS
@given(
    timestamps.filter(lambda ts: ts.tzinfo is not None),
    st.sampled_from([str, datetime.isoformat, lambda ts: ts]),
)
def test_a_timestamp_with_any_offset_lands_on_the_same_instant_in_utc(ts, written):
    row = {"trace_id": "t", "ts": written(ts), "question": "q", "answer": "a"}
    parsed = parse_row(row, max_field_chars=100)
    assert isinstance(parsed, Trace)
    assert (
        parsed.ts == ts and parsed.ts.tzinfo is not None and parsed.ts.utcoffset() == timedelta(0)
    )
    assert parsed.ts.astimezone(UTC).date() == ts.astimezone(UTC).date()
