"""Langfuse's blob-storage export as a trace source: Parquet and JSONL files, in a folder and on S3
(moto).

The files follow Langfuse's export field reference (observations_v2/ with trace context on each row,
the legacy traces/ + observations/, scores/), written with pyarrow and json as an export job writes
them.
"""

from __future__ import annotations

import gzip
import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.core.workspace import Workspace
from pipelines.stores.partitions import read_parts
from pipelines.stores.trace_sources import open_trace_source
from pipelines.stores.trace_sources.spans import UnreadableSource
from pipelines.traces import steps
from tests.support.s3_server import s3_bucket

DAY = date(2026, 11, 20)
BUCKET = "langfuse-exports"


def stamp(minutes: float) -> str:
    return (
        datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc) + timedelta(minutes=minutes)
    ).strftime("%Y-%m-%d %H:%M:%S.%f")


def observation(
    trace: str, oid: str, kind: str, parent: str | None, minute: float, **fields
) -> dict:
    return {
        "id": oid,
        "trace_id": trace,
        "project_id": "p1",
        "environment": "production",
        "type": kind,
        "parent_observation_id": parent,
        "start_time": stamp(minute),
        "end_time": stamp(minute + 0.01),
        "name": fields.pop("name", kind.lower()),
        "metadata": json.dumps(fields.pop("metadata", {})),
        "input": fields.pop("input", None),
        "output": fields.pop("output", None),
        "level": "DEFAULT",
        "provided_model_name": fields.pop("model", None),
        "user_id": "u-1",
        "session_id": "s-1",
        "trace_name": "support-bot",
        **fields,
    }


def rag_trace(
    trace: str,
    minute: float,
    question: str,
    answer: str,
    *,
    language: str | None = None,
    documents=None,
) -> list[dict]:
    documents = (
        documents
        if documents is not None
        else [
            {
                "page_content": "Backups run every night at 02:00 UTC.",
                "metadata": {"chunk_id": "ops-backups#2", "score": 0.81},
            },
            {
                "page_content": "Snapshots are written to the snapshots folder.",
                "metadata": {"chunk_id": "ops-snapshots#1", "score": 0.42},
            },
        ]
    )
    return [
        observation(
            trace,
            f"{trace}-root",
            "SPAN",
            None,
            minute,
            name="rag",
            input=json.dumps({"question": question}),
            output=json.dumps({"answer": answer}),
            metadata={"language": language} if language else {},
        ),
        observation(
            trace,
            f"{trace}-ret",
            "RETRIEVER",
            f"{trace}-root",
            minute + 0.1,
            input=question,
            output=json.dumps(documents),
        ),
        observation(
            trace,
            f"{trace}-gen",
            "GENERATION",
            f"{trace}-root",
            minute + 0.2,
            model="gen-model",
            input=json.dumps(
                [
                    {"role": "system", "content": "Answer from the contexts."},
                    {"role": "user", "content": question},
                ]
            ),
            output=json.dumps({"role": "assistant", "content": answer}),
        ),
    ]


def export_rows() -> tuple[list[dict], list[dict]]:
    observations = [
        *rag_trace("lf-1", 1, "When do backups run?", "Every night at 02:00 UTC.", language="en"),
        *rag_trace(
            "lf-2", 2, "¿Cuándo se hacen las copias de seguridad?", "Cada noche a las 02:00 UTC."
        ),
        *rag_trace(
            "lf-3",
            3,
            "Where are snapshots written?",
            "In the snapshots folder.",
            documents={"hits": 2},
        ),
        observation("lf-4", "lf-4-root", "SPAN", None, 4, name="health-check"),
        *rag_trace(
            "lf-late", 60 * 24, "When do backups run?", "Every night."
        ),  # tomorrow: another day's trace
    ]
    scores = [
        {
            "id": "sc-1",
            "trace_id": "lf-1",
            "observation_id": None,
            "name": "user_feedback",
            "value": 1.0,
            "data_type": "BOOLEAN",
            "timestamp": stamp(30),
            "source": "API",
        },
        {
            "id": "sc-2",
            "trace_id": "lf-2",
            "observation_id": None,
            "name": "user_feedback",
            "value": 0.0,
            "data_type": "BOOLEAN",
            "timestamp": stamp(31),
            "source": "API",
        },
        {
            "id": "sc-3",
            "trace_id": "lf-1",
            "observation_id": None,
            "name": "helpfulness",
            "value": 0.3,
            "data_type": "NUMERIC",
            "timestamp": stamp(32),
            "source": "EVAL",
        },
    ]
    return observations, scores


def write_export(folder: Path, file_format: str) -> None:
    observations, scores = export_rows()
    for table, rows in (("observations_v2", observations), ("scores", scores)):
        (folder / table).mkdir(parents=True, exist_ok=True)
        path = folder / table / f"2026-11-20T00-00-00.{file_format}"
        if file_format == "parquet":
            pq.write_table(pa.Table.from_pylist(rows), path)
        elif file_format == "jsonl.gz":  # the export's gzip option
            path.write_bytes(
                gzip.compress("".join(json.dumps(row) + "\n" for row in rows).encode())
            )
        else:
            path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def configured(settings, path: str):
    return settings.model_copy(
        update={"trace_source": "langfuse-export", "trace_source_path": path}
    )


def expect_day(settings) -> None:
    counts = steps.run_trace_sampling(settings, DAY, version=False, rate=1.0).counts
    assert counts.population == 4  # lf-late starts the next day
    assert counts.sampled == 2
    assert counts.quarantine_reasons == {"missing_field": 1, "unknown_attribute_shape": 1}
    paths = Workspace.from_settings(settings).traces_partition(DAY)
    rows = {row["trace_id"]: row for row in read_parts(paths.parts).to_pylist()}
    assert (
        rows["lf-1"]["question"] == "When do backups run?"
        and rows["lf-1"]["answer"] == "Every night at 02:00 UTC."
    )
    assert [(c["chunk_id"], c["score"]) for c in rows["lf-1"]["contexts"]] == [
        ("ops-backups#2", 0.81),
        ("ops-snapshots#1", 0.42),
    ]
    assert rows["lf-1"]["contexts"][0]["text"] == "Backups run every night at 02:00 UTC."
    assert (rows["lf-1"]["user_feedback"], rows["lf-2"]["user_feedback"]) == (
        1,
        -1,
    )  # the helpfulness score is not feedback
    assert (rows["lf-1"]["language"], rows["lf-2"]["language"]) == (
        "en",
        "es",
    )  # from metadata, then detected
    assert rows["lf-1"]["app"] == "support-bot" and rows["lf-1"]["model"] == "gen-model"
    quarantined = {
        row["trace_id"]: row["reason"] for row in read_parts(paths.quarantine_parts).to_pylist()
    }
    assert quarantined == {"lf-3": "unknown_attribute_shape", "lf-4": "missing_field"}


@pytest.mark.parametrize("file_format", ["parquet", "jsonl", "jsonl.gz"])
def test_a_local_export_is_sampled_like_the_sql_store(settings, tmp_path, file_format):
    write_export(tmp_path / "export", file_format)
    expect_day(configured(settings, str(tmp_path / "export")))


@pytest.fixture
def s3(tmp_path, monkeypatch):
    """An S3 server in process, reached with the DVC remote's variables (AWS_*)."""
    with s3_bucket(
        BUCKET,
        user="langfuse-reader",
        secret="moto-secret",
        tmp_path=tmp_path,
        monkeypatch=monkeypatch,
    ) as client:
        yield client


def test_an_export_on_s3_is_read_with_the_dvc_remotes_credentials(settings, tmp_path, s3):
    write_export(tmp_path / "export", "parquet")
    for path in (tmp_path / "export").rglob("*.parquet"):
        s3.upload_file(str(path), BUCKET, f"exports/{path.relative_to(tmp_path / 'export')}")
    expect_day(configured(settings, f"s3://{BUCKET}/exports"))


def test_a_file_that_is_not_parquet_fails_naming_it(settings, tmp_path):
    write_export(tmp_path / "export", "parquet")
    (tmp_path / "export" / "scores" / "2026-11-21T00-00-00.parquet").write_text("not parquet")
    store = open_trace_source(configured(settings, str(tmp_path / "export")))
    start = datetime(2026, 11, 20, tzinfo=timezone.utc)
    with pytest.raises(UnreadableSource, match="2026-11-21T00-00-00.parquet"):
        store.count_by(start, start + timedelta(days=1), ["app"])


def test_a_jsonl_file_cut_short_quarantines_the_trace_it_cut(settings, tmp_path):
    write_export(tmp_path / "export", "jsonl")
    root, retriever, _ = rag_trace("lf-5", 5, "When do backups run?", "Every night.")
    cut = json.dumps(retriever)
    (tmp_path / "export" / "observations_v2" / "2026-11-20T01-00-00.jsonl").write_text(
        json.dumps(root) + "\n" + cut[: len(cut) // 2]
    )
    counts = steps.run_trace_sampling(
        configured(settings, str(tmp_path / "export")), DAY, version=False, rate=1.0
    ).counts
    assert counts.population == 5 and counts.quarantine_reasons["truncated_file"] == 1
    paths = Workspace.from_settings(settings).traces_partition(DAY)
    assert {
        r["trace_id"]
        for r in read_parts(paths.quarantine_parts).to_pylist()
        if r["reason"] == "truncated_file"
    } == {"lf-5"}


def test_inputs_recorded_by_the_observe_decorator_give_the_question_and_the_tools_arguments(
    settings, tmp_path
):
    """Langfuse's `@observe` records a call as `{"args": [...], "kwargs": {...}}` and a text result
    as JSON text."""

    def call(*args, **kwargs) -> str:
        return json.dumps({"args": list(args), "kwargs": kwargs})

    question = "When do backups run?"
    root, retriever, generation = rag_trace("lf-6", 6, question, "Every night.")
    root.update(input=call(question), output=json.dumps("Every night at 02:00 UTC."))
    retriever["input"] = None  # the root's call alone holds the question
    generation["input"] = json.dumps(
        [{"role": "user", "content": f"Context:\nBackups run at 02:00.\n\nQuestion: {question}"}]
    )
    tools = [
        observation(
            "lf-6",
            "lf-6-tool",
            "TOOL",
            "lf-6-root",
            6.05,
            name="vector_search",
            input=call(query="backups", top_k=3),
        ),
        observation(
            "lf-6",
            "lf-6-fetch",
            "TOOL",
            "lf-6-root",
            6.06,
            name="fetch",
            input=call("https://example.org", timeout=3),
        ),
    ]
    (tmp_path / "export" / "observations_v2").mkdir(parents=True)
    (tmp_path / "export" / "observations_v2" / "2026-11-20T00-00-00.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in [root, retriever, generation, *tools])
    )
    store = open_trace_source(configured(settings, str(tmp_path / "export")))
    start = datetime(2026, 11, 20, tzinfo=timezone.utc)
    (row,) = store.iter_rows(start, start + timedelta(days=1), ["lf-6"])
    assert "source_rejection" not in row
    assert (row["question"], row["answer"]) == (question, "Every night at 02:00 UTC.")
    assert [(c["name"], c["arguments"]) for c in row["tool_calls"]] == [
        ("vector_search", {"query": "backups", "top_k": 3}),
        ("fetch", {"timeout": 3, "args": ["https://example.org"]}),
    ]
