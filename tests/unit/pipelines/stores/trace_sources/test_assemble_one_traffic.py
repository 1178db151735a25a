"""One traffic, one outcome: the same turns through every trace source sample into the same rows.

tests/support/one_traffic.py writes the turns as each source holds them (a SQL table, OTLP/JSON span
files in three vocabularies, Phoenix's span dataframe, Langfuse's export); each source's day goes
through the sampling step, and the partitions are compared field by field with the SQL store's and
with the turns themselves.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pipelines.core.settings import Settings
from pipelines.core.workspace import Workspace
from pipelines.stores.partitions import read_manifest, read_parts
from pipelines.traces import steps
from tests.support import one_traffic
from tests.support.one_traffic import APP, DAY, MODEL, TURNS

SOURCES = ("sql", "otlp-genai", "otlp-openllmetry", "openinference", "phoenix", "langfuse-export")
COMPARED = (
    "question",
    "answer",
    "contexts",
    "tool_calls",
    "app",
    "language",
    "user_feedback",
    "model",
    "latency_ms",
)
SPANISH = {"rag-es"}


def write_source(source: str, settings: Settings, folder) -> Settings:
    """Write the traffic as `source` holds it; the settings that read it."""
    if source == "sql":
        one_traffic.write_sql(settings)
        return settings
    folder.mkdir(parents=True)
    kind, path = source, folder
    if source == "otlp-genai":
        kind = "otlp"
        one_traffic.write_genai_otlp(folder / "traces.jsonl")
    elif source == "otlp-openllmetry":
        kind = "otlp"
        one_traffic.write_openllmetry_otlp(folder / "traces.jsonl")
    elif source == "openinference":
        one_traffic.write_openinference_otlp(folder / "traces.jsonl")
    elif source == "phoenix":
        kind = "openinference"
        one_traffic.write_openinference_otlp(folder.parent / "phoenix-otlp.jsonl")
        one_traffic.write_phoenix_parquet(
            folder.parent / "phoenix-otlp.jsonl", folder / f"{APP}.parquet"
        )
    else:
        one_traffic.write_langfuse_export(folder)
    return settings.model_copy(update={"trace_source": kind, "trace_source_path": str(path)})


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    picked = {k: row[k] for k in COMPARED}
    picked["contexts"] = [(c["chunk_id"], c["text"], c["score"]) for c in row["contexts"]]
    picked["tool_calls"] = [(c["name"], json.loads(c["arguments"])) for c in row["tool_calls"]]
    picked["ts"] = row["ts"].isoformat()
    return picked


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, tuple[dict, dict, dict]]:
    """Per source: (sampled rows by trace id, (reason, field) of quarantined ones by trace id,
    manifest)."""
    result = {}
    for source in SOURCES:
        root = tmp_path_factory.mktemp(source)
        settings = Settings(
            home=root / "home", anonymizer_key="test-key-not-secret", sample_workers=1
        )
        configured = write_source(source, settings, root / "export")
        steps.run_trace_sampling(configured, DAY, version=False, rate=1.0)
        paths = Workspace.from_settings(configured).traces_partition(DAY)
        sampled = {row["trace_id"]: comparable(row) for row in read_parts(paths.parts).to_pylist()}
        quarantined = {
            row["trace_id"]: (row["reason"], row["field"])
            for row in read_parts(paths.quarantine_parts).to_pylist()
        }
        result[source] = sampled, quarantined, read_manifest(paths.manifest)
    return result


def test_the_sql_store_samples_the_turns_as_they_were_made(outcomes):
    sampled, quarantined, _ = outcomes["sql"]
    by_id = {t.trace_id: t for t in TURNS}
    assert set(sampled) == {t.trace_id for t in TURNS if t.quarantined_as is None}
    assert {t: reason for t, (reason, _) in quarantined.items()} == {
        t.trace_id: t.quarantined_as for t in TURNS if t.quarantined_as
    }
    for trace_id, row in sampled.items():
        turn = by_id[trace_id]
        assert row["question"] == turn.question and row["answer"] == turn.answer
        assert row["contexts"] == [(c.chunk_id, c.text, c.score) for c in turn.chunks]
        assert row["tool_calls"] == ([turn.tool] if turn.tool else [])
        assert (row["app"], row["model"], row["user_feedback"]) == (APP, MODEL, turn.feedback)
        assert row["language"] == (turn.language or ("es" if turn.name in SPANISH else "en"))
        assert row["latency_ms"] == turn.latency_ms and row["ts"] == turn.start.isoformat()
    empty = sampled[next(t.trace_id for t in TURNS if t.name == "empty-retrieval")]
    assert empty["contexts"] == [] and empty["answer"]


@pytest.mark.parametrize("source", SOURCES[1:])
def test_every_source_samples_the_same_rows_as_the_sql_store(outcomes, source):
    expected, _, _ = outcomes["sql"]
    sampled, _, _ = outcomes[source]
    assert sorted(sampled) == sorted(expected)
    for trace_id, row in expected.items():
        differing = {
            k: (sampled[trace_id][k], v) for k, v in row.items() if sampled[trace_id][k] != v
        }
        assert not differing, (trace_id, differing)


@pytest.mark.parametrize("source", SOURCES[1:])
def test_every_source_quarantines_the_same_traces_for_the_same_reasons(outcomes, source):
    assert outcomes[source][1] == outcomes["sql"][1]


@pytest.mark.parametrize("source", SOURCES[1:])
def test_every_source_stratifies_the_day_alike(outcomes, source):
    """The strata decide which traces a rate below 1 selects: they must not depend on the span
    vocabulary. A span source stratifies a trace whose app recorded no language by its question's;
    the SQL store by its column, where a null is a stratum of its own (the Spanish turn records
    none)."""
    manifest, expected, sql = outcomes[source][2], outcomes[SOURCES[1]][2], outcomes["sql"][2]
    for key in ("population", "selected", "sampled", "quarantined", "quarantine_reasons"):
        assert manifest[key] == sql[key], key
    assert manifest["strata"] == expected["strata"]
    languages = {s["stratum"].get("language") for s in manifest["strata"]}
    assert "es" in languages and None not in languages
