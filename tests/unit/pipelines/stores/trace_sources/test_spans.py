"""Span exports as trace sources: real exports of a tiny instrumented RAG app, sampled through the
product's path.

The app (tests/support/traced_rag_app.py) asks the simulator over HTTP and a Qdrant local
collection; its spans are written by the OpenTelemetry SDK (GenAI conventions by hand, OpenLLMetry's
and OpenInference's OpenAI instrumentations) through the OTLP/JSON file exporter, as the Collector's
file exporter writes them.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from pipelines.core.files import file_sha256
from pipelines.models.simulator import running_simulator
from pipelines.cli.prompt_catalog import all_prompts
from pipelines.stores.partitions import read_parts
from pipelines.stores.trace_sources import open_trace_source
from pipelines.stores.trace_sources.spans import Span, UnreadableSource, read_otlp_json
from pipelines.traces import steps
from pipelines.core.workspace import Workspace
from tests.support.one_traffic import phoenix_frame
from tests.support.traced_rag_app import TracedRagApp, Turn

TURNS = [
    Turn("Which port does Qdrant use for the REST API?", language="en", feedback=1),
    Turn("¿En qué puerto escucha el servidor?", feedback=-1),
    Turn("How long are nightly backups kept?", agent=True),
    Turn("¿Cuánto tiempo se guardan las copias de seguridad?", language="es"),
]
BROKEN = [
    Turn("What is the snapshot folder?", fault="cache_hit"),
    Turn("Where are snapshots written?", fault="no_documents"),
    Turn("How do I restore a snapshot?", fault="documents_as_text"),
]
STYLES = ("genai", "openllmetry", "openinference")


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Per style: the export folder and, per trace id, the turn that made it (and its answer)."""
    root = tmp_path_factory.mktemp("exports")
    made: dict[str, dict[str, tuple[Turn, str]]] = {}
    with running_simulator(prompts=all_prompts()) as url:
        for style in STYLES:
            app = TracedRagApp(
                url, root / f"qdrant-{style}", root / style / "traces.jsonl", style=style
            )
            try:
                turns = TURNS + (BROKEN if style == "genai" else [])
                made[style] = {
                    trace_id: (turn, answer)
                    for turn in turns
                    for trace_id, answer in [app.ask(turn)]
                }
            finally:
                app.close()
    return root, made


def day_of(folder: Path) -> date:
    starts = [s.start_ns for s in read_otlp_json(folder / "traces.jsonl") if isinstance(s, Span)]
    return datetime.fromtimestamp(min(starts) / 1e9, tz=timezone.utc).date()


def source_settings(settings, style: str, folder: Path):
    return settings.model_copy(
        update={
            "trace_source": "openinference" if style == "openinference" else "otlp",
            "trace_source_path": str(folder),
        }
    )


@pytest.mark.parametrize("style", STYLES)
def test_each_instrumentation_assembles_into_the_trace_contract(exports, settings, style):
    root, made = exports
    folder = root / style
    assert all(
        len(line) > 0 and json.loads(line)["resourceSpans"]
        for line in (folder / "traces.jsonl").read_text().splitlines()
    )
    day = day_of(folder)
    store = open_trace_source(source_settings(settings, style, folder))
    start = datetime.combine(day, datetime.min.time(), tzinfo=timezone.utc)
    end = start + timedelta(days=1)
    rows = {row["trace_id"]: row for row in store.iter_rows(start, end, made[style])}
    assert set(rows) == set(made[style])
    for trace_id, (turn, answer) in made[style].items():
        row = rows[trace_id]
        if turn.fault:
            continue
        assert "source_rejection" not in row, row.get("source_rejection")
        assert row["question"] == turn.question
        assert (
            answer in row["answer"]
        )  # OpenLLMetry records the model's structured reply, `{"answer": ...}`
        assert row["app"] == "docs-bot" and row["user_feedback"] == turn.feedback
        assert row["language"] == (
            turn.language or ("es" if "¿" in turn.question else "en")
        )  # recorded, else detected
        assert [c["chunk_id"] for c in row["contexts"]][:1] in (
            ["ops-ports#1"],
            ["es-puertos#1"],
            ["ops-backups#2"],
            ["es-copias#1"],
        )
        assert all(isinstance(c["score"], float) and 0 < c["score"] <= 1 for c in row["contexts"])
        if (
            style == "openinference"
        ):  # OpenInference records each document's text; the GenAI convention ids and scores
            assert all(c["text"] for c in row["contexts"])
        assert row["model"] in (None, "gen-model") and (
            style == "genai" or row["model"] == "gen-model"
        )
        if turn.agent:
            assert [c["name"] for c in row["tool_calls"]] == ["vector_search"]
            assert row["tool_calls"][0]["arguments"]["query"] == turn.question
        else:
            assert row["tool_calls"] == []


def test_broken_span_trees_are_rejected_with_their_reason(exports, settings):
    root, made = exports
    folder = root / "genai"
    day = day_of(folder)
    store = open_trace_source(source_settings(settings, "genai", folder))
    start = datetime.combine(day, datetime.min.time(), tzinfo=timezone.utc)
    rows = {
        row["trace_id"]: row
        for row in store.iter_rows(start, start + timedelta(days=1), made["genai"])
    }
    reasons = {
        made["genai"][t][0].fault: row.get("source_rejection", (None,))[0]
        for t, row in rows.items()
    }
    assert reasons == {
        None: None,
        "cache_hit": "missing_field",
        # a retrieval that found nothing is a failure to evaluate, not a broken tree
        "no_documents": None,
        "documents_as_text": "unknown_attribute_shape",
    }
    empty = next(row for t, row in rows.items() if made["genai"][t][0].fault == "no_documents")
    assert (
        empty["contexts"] == []
        and empty["question"] == "Where are snapshots written?"
        and empty["answer"]
    )


def test_a_day_of_spans_is_sampled_like_the_sql_store(exports, settings):
    """The product's own path: selection, anonymization, quarantine per reason with the trace id,
    validation, and a rerun that writes the same bytes. A truncated file quarantines the traces it
    names as truncated_file, and every trace that may have lost a span in the cut as
    incomplete_trace: none is sampled as if whole."""
    root, made = exports
    folder = settings.home.parent / "otlp"
    shutil.copytree(root / "genai", folder)
    day = day_of(folder)
    # The Collector was killed mid-write: the last line of a second file, an hour apart, is cut in
    # half.
    shift = 3_600 * 10**9 * (-1 if datetime.now(timezone.utc).hour >= 12 else 1)
    whole = [
        re.sub(r'(TimeUnixNano":")(\d+)', lambda m: m.group(1) + str(int(m.group(2)) + shift), line)
        for line in (root / "openllmetry" / "traces.jsonl").read_text().splitlines()
    ]
    half = whole[-1][: len(whole[-1]) // 2]
    (folder / "traces-2.jsonl").write_text("\n".join(whole[:-1]) + "\n" + half)
    cut = set(re.findall(r'"traceId":"([0-9a-f]{32})"', half))
    # A trace all of whose spans were in the lost half leaves no trace id behind: it cannot be
    # counted anywhere.
    present = cut | {t for t in made["openllmetry"] if any(t in line for line in whole[:-1])}
    lost_elsewhere = {
        t for t in re.findall(r'"traceId":"([0-9a-f]{32})"', whole[-1][len(half) :])
    } & present - cut
    assert cut, "the cut line holds spans of some trace"
    configured = source_settings(settings, "genai", folder)

    counts = steps.run_trace_sampling(configured, day, version=False, rate=1.0).counts
    assert counts.population == counts.selected == len(TURNS) + len(BROKEN) + len(present)
    # The genai traces, an hour from the cut, are whole; the empty retrieval among them is sampled.
    assert counts.sampled == len(TURNS) + 1
    assert counts.quarantine_reasons == {
        "missing_field": 1,
        "unknown_attribute_shape": 1,
        "truncated_file": len(cut),
        "incomplete_trace": len(present - cut),  # all within seconds of the cut
    }
    assert counts.source_counts["spans_lost"] == half.count('"spanId"')
    assert counts.source_counts["rejected_incomplete_trace"] == len(present - cut)
    paths = Workspace.from_settings(configured).traces_partition(day)
    quarantined = {
        row["trace_id"]: row["reason"] for row in read_parts(paths.quarantine_parts).to_pylist()
    }
    assert {t for t, reason in quarantined.items() if reason == "truncated_file"} == cut
    assert lost_elsewhere <= {
        t for t, reason in quarantined.items() if reason == "incomplete_trace"
    }
    sampled = read_parts(paths.parts).to_pylist()
    assert {row["language"] for row in sampled} == {"en", "es"} and all(
        row["sample_rate"] == 1.0 for row in sampled
    )
    # The root span's id survives anonymization: the online eval's events are tied to it.
    roots = {
        s.trace_id: s.span_id
        for path in folder.glob("*.jsonl")
        for s in read_otlp_json(path)
        if isinstance(s, Span) and not s.parent_span_id
    }
    assert all(json.loads(row["metadata"])["span_id"] == roots[row["trace_id"]] for row in sampled)

    before = {p.name: file_sha256(p) for p in sorted(paths.root.rglob("*.parquet"))}
    steps.run_trace_sampling(configured, day, version=False, rate=1.0)
    assert {p.name: file_sha256(p) for p in sorted(paths.root.rglob("*.parquet"))} == before


def test_a_wholly_unreadable_file_fails_the_task_naming_it(exports, settings):
    root, _ = exports
    folder = settings.home.parent / "otlp"
    shutil.copytree(root / "genai", folder)
    (folder / "zz-metrics.bin").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(UnreadableSource, match="zz-metrics.bin"):
        steps.run_trace_sampling(
            source_settings(settings, "genai", folder), day_of(folder), version=False, rate=1.0
        )


def test_spans_of_one_trace_in_several_files_and_lines_are_assembled_once(exports, settings):
    root, made = exports
    folder = settings.home.parent / "split"
    folder.mkdir(parents=True)
    lines = (root / "openinference" / "traces.jsonl").read_text().splitlines()
    spans_per_line = [
        sum(len(s["spans"]) for r in json.loads(line)["resourceSpans"] for s in r["scopeSpans"])
        for line in lines
    ]
    assert (
        len(lines) > 1 and max(spans_per_line) <= 7
    )  # the batch processor cut the traces across lines
    for i, line in enumerate(
        reversed(lines)
    ):  # newest file first in name order: arrival order must not matter
        (folder / f"part-{i:02d}.jsonl").write_text(line + "\n")
    store = open_trace_source(source_settings(settings, "openinference", folder))
    day = day_of(root / "openinference")
    start = datetime.combine(day, datetime.min.time(), tzinfo=timezone.utc)
    counts = store.count_by(start, start + timedelta(days=1), ["app"])
    assert counts == {("docs-bot",): len(made["openinference"])}
    per_trace = defaultdict(int)
    for path in folder.iterdir():
        for span in read_otlp_json(path):
            per_trace[span.trace_id] += 1
    assert max(per_trace.values()) >= 3


def test_spans_exported_from_phoenix_as_a_dataframe_assemble_like_its_otlp_spans(
    exports, settings, tmp_path
):
    import pandas as pd

    root, made = exports
    spans = [
        s for s in read_otlp_json(root / "openinference" / "traces.jsonl") if isinstance(s, Span)
    ]
    frame = pd.DataFrame(phoenix_frame(spans))
    (tmp_path / "phoenix").mkdir()
    frame.to_parquet(
        tmp_path / "phoenix" / "docs-bot.parquet"
    )  # a project's export, named after it
    day = day_of(root / "openinference")
    start = datetime.combine(day, datetime.min.time(), tzinfo=timezone.utc)
    from_otlp = open_trace_source(
        source_settings(settings, "openinference", root / "openinference")
    )
    from_phoenix = open_trace_source(
        source_settings(
            settings.model_copy(update={"home": tmp_path / "h2"}),
            "openinference",
            tmp_path / "phoenix",
        )
    )
    expected = list(from_otlp.iter_rows(start, start + timedelta(days=1), made["openinference"]))
    got = list(from_phoenix.iter_rows(start, start + timedelta(days=1), made["openinference"]))
    assert len(got) == len(made["openinference"]) and all("source_rejection" not in r for r in got)
    strip = lambda r: {k: v for k, v in r.items() if k not in ("ts", "latency_ms")}  # noqa: E731 - microseconds in pandas
    for a, b in zip(got, expected):
        assert {k for k in strip(a) if strip(a)[k] != strip(b)[k]} == set(), a["trace_id"]
    assert any(r["tool_calls"] for r in got) and all(c["text"] for r in got for c in r["contexts"])


def test_tool_arguments_phoenix_parsed_into_objects_come_back_as_each_calls_own_json(tmp_path):
    """Parquet stores the objects of one column as a struct of every key the column holds: a call's
    arguments must not gain the other calls' keys as nulls."""
    import pandas as pd

    from pipelines.stores.trace_sources.phoenix_spans import read_phoenix_parquet

    calls = [
        ("vector_search", {"query": "¿En qué puerto escucha?", "top_k": 3}),
        ("sql_query", {"query": "SELECT 1"}),
    ]
    frame = pd.DataFrame(
        [
            {
                "context.trace_id": "a" * 32,
                "context.span_id": f"{i + 1:016x}",
                "span_kind": "TOOL",
                "start_time": datetime(2026, 11, 18, 9, tzinfo=timezone.utc),
                "attributes.tool.name": name,
                "attributes.tool.parameters": arguments,
            }
            for i, (name, arguments) in enumerate(calls)
        ]
    )
    frame.to_parquet(tmp_path / "docs-bot.parquet")
    spans = list(read_phoenix_parquet(tmp_path / "docs-bot.parquet"))
    assert [
        (s.attributes["tool.name"], json.loads(s.attributes["tool.parameters"])) for s in spans
    ] == calls


def test_a_frameworks_json_payload_on_the_root_gives_the_question_and_the_answer():
    """LangChain under OpenInference records the chain's input and output as JSON payloads, not as
    the text."""
    from pipelines.stores.trace_sources.assemble import assemble_trace

    root = Span(
        "a" * 32,
        "1" * 16,
        "",
        "RetrievalQA",
        1_000,
        9_000,
        {
            "openinference.span.kind": "CHAIN",
            "input.mime_type": "application/json",
            "output.mime_type": "application/json",
            "input.value": json.dumps({"input": "How do I restart the pod?", "chat_history": []}),
            "output.value": json.dumps({"output": "Run kubectl rollout restart."}),
        },
    )
    retriever = Span(
        "a" * 32,
        "2" * 16,
        "1" * 16,
        "retrieve",
        2_000,
        3_000,
        {
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.id": "ops#1",
            "retrieval.documents.0.document.content": "Restart with kubectl rollout restart.",
            "retrieval.documents.0.document.score": 0.7,
        },
    )
    row = assemble_trace([retriever, root], source="openinference")
    assert "source_rejection" not in row
    assert (row["question"], row["answer"]) == (
        "How do I restart the pod?",
        "Run kubectl rollout restart.",
    )
    assert row["contexts"] == [
        {"chunk_id": "ops#1", "text": "Restart with kubectl rollout restart.", "score": 0.7}
    ]
    broken = Span(
        "a" * 32,
        "1" * 16,
        "",
        "RetrievalQA",
        1_000,
        9_000,
        {**root.attributes, "input.value": "{not json"},
    )
    assert (
        assemble_trace([retriever, broken], source="openinference")["question"] is None
    )  # no question, no guess


def test_a_file_last_written_before_the_day_began_is_not_read(exports, settings):
    """The Collector's rotated files of earlier days stay in the folder; a day reads only those
    written since."""
    import os

    root, made = exports
    folder = settings.home.parent / "rotated"
    shutil.copytree(root / "genai", folder / "today")
    shutil.copytree(root / "openinference", folder / "old")
    day = day_of(folder / "today")
    start = datetime.combine(day, datetime.min.time(), tzinfo=timezone.utc)
    store = open_trace_source(source_settings(settings, "genai", folder))
    assert sum(store.count_by(start, start + timedelta(days=1), []).values()) == len(
        made["genai"]
    ) + len(made["openinference"])
    old = folder / "old" / "traces.jsonl"
    before = (start - timedelta(hours=2)).timestamp()
    os.utime(
        old, (before, before)
    )  # as if rotated out two hours before midnight: its spans cannot be this day's
    store = open_trace_source(source_settings(settings, "genai", folder))
    assert sum(store.count_by(start, start + timedelta(days=1), []).values()) == len(made["genai"])
