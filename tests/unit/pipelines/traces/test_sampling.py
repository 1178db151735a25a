"""The sampling stage end to end on the embedded store: counts, quarantine, PII, idempotence."""

import json
import logging
from collections import Counter
from datetime import date, datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.core.files import file_sha256
from pipelines.core.validation import ValidationFailed
from pipelines.core.workspace import PartitionPaths, Workspace
from pipelines.stores.partitions import read_parts
from pipelines.stores.traces import TraceStore
from pipelines.traces import steps
from pipelines.traces.select import stratum_target
from ragwatch_harness.demo.traces import generate_store_rows

DAY = date(2026, 11, 20)
EMAIL = "lucia.fernandez@correo-ejemplo.es"
DNI = "12345678Z"
CUSTOMER_NUMBER = "987654321012"
"""Twelve digits of no format the anonymizer knows: it keeps them, the residual check does not."""


def crafted_rows():
    at = datetime(2026, 11, 20, 9, 30, tzinfo=timezone.utc)
    contexts = json.dumps(
        [{"chunk_id": "kb/ticket#1", "text": f"Ticket de {EMAIL}, DNI {DNI}", "score": 0.9}]
    )
    base = {
        "answer": "ok",
        "contexts": contexts,
        "tool_calls": "[]",
        "model": "m",
        "app": "support-bot",
        "language": "es",
        "user_feedback": None,
        "latency_ms": 100,
        "metadata": "{}",
    }
    return [
        {
            **base,
            "trace_id": "zz-pii",
            "ts": at,
            "question": f"Soy Lucía Fernández, mi correo es {EMAIL}",
            "tool_calls": json.dumps(
                [
                    {
                        "name": "sql_query",
                        "arguments": {"query": f"SELECT * FROM users WHERE email = '{EMAIL}'"},
                    }
                ]
            ),
        },
        {**base, "trace_id": "zz-noquestion", "ts": at, "question": None},
        {
            **base,
            "trace_id": "zz-badjson",
            "ts": at,
            "question": "q",
            "contexts": f'[{{"text": "{EMAIL}',
        },
        {
            **base,
            "trace_id": "zz-huge",
            "ts": at,
            "question": "q",
            "answer": f"{EMAIL} " + "lorem " * 500_000,
        },
        {**base, "trace_id": "zz-badts", "ts": "2026-11-20 25:61:00", "question": "q"},
        {
            **base,
            "trace_id": "zz-residual",
            "ts": at,
            "question": f"Mi referencia es {CUSTOMER_NUMBER}, escribe a {EMAIL}",
            "answer": "Gracias, lo reviso.",
        },
    ]


@pytest.fixture
def store_settings(settings):
    writer = TraceStore.from_settings(settings, read_only=False)
    writer.create_table()
    writer.insert_rows(
        generate_store_rows(days=2, per_day=400, end=DAY + timedelta(days=1), seed=5)
    )
    writer.insert_rows(crafted_rows())
    return settings


def partition(settings):
    return Workspace.from_settings(settings).traces_partition(DAY)


def partition_bytes(settings):
    root = partition(settings).root
    return {
        str(p.relative_to(root)): file_sha256(p) for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_selected_equals_sampled_plus_quarantined_with_reasons(store_settings, caplog):
    caplog.set_level(logging.INFO)
    result = steps.run_trace_sampling(store_settings, DAY, version=False, rate=1.0).counts
    assert result.selected == result.population > 400
    assert result.sampled + result.quarantined == result.selected
    reasons = result.quarantine_reasons
    assert reasons["missing_field"] >= 1 and reasons["invalid_json"] >= 1
    assert reasons["field_too_large"] >= 1 and reasons["bad_timestamp"] >= 1

    paths = partition(store_settings)
    root = paths.root
    quarantine = read_parts(paths.quarantine_parts).to_pylist()
    assert len(quarantine) == result.quarantined
    by_id = {row["trace_id"]: row for row in quarantine}
    assert by_id["zz-huge"]["reason"] == "field_too_large" and by_id["zz-huge"]["field"] == "answer"
    assert by_id["zz-badts"]["reason"] == "bad_timestamp"
    manifest = json.loads(paths.manifest.read_text())
    assert manifest["sampled"] == result.sampled and manifest["quarantine_reasons"] == reasons
    assert pq.read_table(root.parent).num_rows == result.sampled

    everything_on_disk = b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())
    sampled = read_parts(paths.parts).to_pandas().set_index("trace_id")
    assert "[EMAIL_" in sampled.loc["zz-pii", "question"]
    assert "[EMAIL_" in sampled.loc["zz-pii", "tool_calls"][0]["arguments"]
    assert json.loads(sampled.loc["zz-pii", "pii_counts"])["EMAIL"] >= 3
    for secret in (EMAIL, DNI):
        assert secret.encode() not in everything_on_disk
        assert secret not in caplog.text


def test_a_row_the_residual_check_flags_is_quarantined_and_the_rest_of_the_day_publishes(
    store_settings,
):
    from pipelines.privacy.anonymizer import Anonymizer

    leaked = Anonymizer(store_settings.pseudonym_key).anonymize_text(
        f"Mi referencia es {CUSTOMER_NUMBER}", "t", Counter()
    )
    assert CUSTOMER_NUMBER in leaked  # the premise: a value the anonymizer's detectors do not know

    # In parts written by two shards: validation reads them as one dataset (ids ascend across part
    # boundaries).
    in_parts = store_settings.model_copy(update={"sample_part_rows": 100, "sample_shards": 2})
    result = steps.run_trace_sampling(in_parts, DAY, version=False, rate=1.0)
    assert result.validation.describe().startswith("passed")
    assert len(partition(in_parts).parts) == -(-result.counts.selected // 100) > 2
    counts = result.counts
    assert counts.sampled + counts.quarantined == counts.selected
    # Broad rules have false alarms (a ten-digit constant in a context): few, and each costs one
    # row.
    assert 1 <= counts.quarantine_reasons["residual_pii"] <= 0.01 * counts.selected

    paths = partition(store_settings)
    (row,) = [
        r for r in read_parts(paths.quarantine_parts).to_pylist() if r["trace_id"] == "zz-residual"
    ]
    assert row["reason"] == "residual_pii" and row["field"] == "question"
    assert row["detail"] == "question: long_digit_run"
    raw = json.loads(row["raw"])
    assert (
        raw["question"].startswith("[withheld by ragwatch")
        and raw["answer"] == "Gracias, lo reviso."
    )
    assert "zz-residual" not in read_parts(paths.parts).column("trace_id").to_pylist()
    everything_on_disk = b"".join(p.read_bytes() for p in paths.root.rglob("*") if p.is_file())
    assert (
        CUSTOMER_NUMBER.encode() not in everything_on_disk
        and EMAIL.encode() not in everything_on_disk
    )


def test_the_same_email_gets_the_same_pseudonym_across_fields_of_one_trace(store_settings):
    steps.run_trace_sampling(store_settings, DAY, version=False, rate=1.0)
    row = (
        read_parts(partition(store_settings).parts).to_pandas().set_index("trace_id").loc["zz-pii"]
    )
    token = row["question"].split("mi correo es ")[1].strip()
    assert token in row["contexts"][0]["text"] and token in row["tool_calls"][0]["arguments"]


def test_a_rerun_of_the_same_day_writes_identical_bytes(store_settings):
    first = steps.run_trace_sampling(store_settings, DAY, version=False)
    before = partition_bytes(store_settings)
    second = steps.run_trace_sampling(store_settings, DAY, version=False)
    assert partition_bytes(store_settings) == before
    assert first == second
    manifest = json.loads(partition(store_settings).manifest.read_text())
    assert len(manifest["strata"]) > 6
    for stratum in manifest["strata"]:
        assert stratum["selected"] == stratum_target(stratum["population"], 0.05, 2), stratum
    assert sum(s["selected"] for s in manifest["strata"]) == first.counts.selected
    assert steps.published_counts(store_settings, DAY) == first.counts


def test_a_failed_validation_publishes_nothing_and_keeps_the_previous_version(store_settings):
    steps.run_trace_sampling(store_settings, DAY, version=False)
    published = partition_bytes(store_settings)

    staged = steps.stage_trace_sample(store_settings, DAY)
    (data_file,) = PartitionPaths(staged.staged).parts
    table = pq.read_table(data_file)
    leaked = table.column("question").to_pylist()
    leaked[0] = f"contact me at {EMAIL}"
    pq.write_table(
        table.set_column(table.schema.get_field_index("question"), "question", pa.array(leaked)),
        data_file,
    )

    with pytest.raises(ValidationFailed) as failure:
        steps.validate_trace_sample(staged)
    message = str(failure.value)
    assert (
        "expect_column_values_to_be_in_set(_residual_pii)" in message
        and "Nothing was published" in message
    )
    assert EMAIL not in message  # the report names rows, never the offending values
    assert table.column("trace_id")[0].as_py() in message
    assert partition_bytes(store_settings) == published


def test_an_empty_day_publishes_an_empty_partition(store_settings):
    result = steps.run_trace_sampling(store_settings, date(2026, 1, 1), version=False)
    assert (result.counts.population, result.counts.selected, result.counts.sampled) == (0, 0, 0)
    assert result.validation.describe().startswith("passed")


def test_worker_processes_write_the_same_bytes_as_one_process(store_settings):
    # Small batches so the day's rows span several batches spread over the workers.
    one = store_settings.model_copy(update={"sample_workers": 1, "trace_batch_size": 60})
    two = store_settings.model_copy(update={"sample_workers": 2, "trace_batch_size": 60})
    alone = steps.run_trace_sampling(one, DAY, version=False, rate=1.0)
    in_one_process = partition_bytes(one)
    pooled = steps.run_trace_sampling(two, DAY, version=False, rate=1.0)
    assert pooled.counts == alone.counts and pooled.counts.selected > 5 * 60
    assert partition_bytes(two) == in_one_process


def test_validation_in_batches_sees_failures_across_batch_boundaries(store_settings):
    from pipelines.traces.quality import validate_trace_partition

    staged = steps.stage_trace_sample(store_settings, DAY, rate=1.0)
    (data_file,) = PartitionPaths(staged.staged).parts
    table = pq.read_table(data_file)
    ids, questions = table.column("trace_id").to_pylist(), table.column("question").to_pylist()
    assert len(ids) > 300
    ids[250] = ids[10]  # a duplicate id two batches away from its twin
    leaked = [5, 205]  # PII in two different batches
    for row in leaked:
        questions[row] = f"contact me at {EMAIL}"
    table = table.set_column(0, "trace_id", pa.array(ids))
    table = table.set_column(
        table.schema.get_field_index("question"), "question", pa.array(questions)
    )
    pq.write_table(table, data_file)

    report = validate_trace_partition(
        PartitionPaths(staged.staged), workers=2, batch_rows=100, suite_rows=100
    )
    failed = {c["column"]: json.loads(c["detail"]) for c in report.failures}
    assert set(failed) >= {"_id_ascending", "_residual_pii"}
    assert "trace_id" not in failed  # each batch alone has unique ids: only the order check sees it
    assert failed["_residual_pii"]["unexpected_count"] == 2
    assert failed["_residual_pii"]["examples"] == ["question: at_sign_like"] * 2
    assert set(failed["_residual_pii"]["rows"]) == {ids[row] for row in leaked}
    assert failed["_id_ascending"]["rows"] == [ids[250]]
    assert EMAIL not in json.dumps(report.as_dict())


@pytest.fixture
def small_day(settings):
    """A day of ~130 traces, a few of them broken or with PII, in parts of 20 selected rows."""
    writer = TraceStore.from_settings(settings, read_only=False)
    writer.create_table()
    writer.insert_rows(
        generate_store_rows(days=1, per_day=120, end=DAY + timedelta(days=1), seed=5)
    )
    writer.insert_rows(r for r in crafted_rows() if r["trace_id"] != "zz-huge")
    return settings.model_copy(update={"sample_part_rows": 20, "sample_workers": 1})


def sample_in_shards(settings, shard_count, *, order=1):
    """The DAG's tasks in this process but validation (tested apart): select, each shard (in
    `order`), merge, promote."""
    planned = steps.select_trace_sample(settings, DAY, rate=1.0, shard_count=shard_count)
    for shard in planned[::order]:
        steps.write_trace_shard(settings, shard)
    staged = steps.merge_trace_sample(settings, planned)
    steps.promote_trace_sample(settings, staged)
    return planned, staged


def test_one_two_or_four_shards_publish_the_same_bytes(small_day):
    single, staged = sample_in_shards(small_day, 1)
    published = partition_bytes(small_day)
    counts = staged.counts
    assert counts.sampled + counts.quarantined == counts.selected > 100 and counts.quarantined >= 3
    paths = partition(small_day)
    parts = -(-counts.selected // 20)
    assert [p.name for p in paths.parts] == [f"part-{i:05d}.parquet" for i in range(parts)]
    assert [p.name for p in paths.quarantine_parts] == [p.name for p in paths.parts]
    assert (
        read_parts(paths.parts).num_rows == counts.sampled
        and read_parts(paths.quarantine_parts).num_rows == counts.quarantined
    )
    assert len(single) == 1 and single[0].parts == (0, parts)

    for shard_count in (2, 4):
        planned, again = sample_in_shards(
            small_day, shard_count, order=-1
        )  # shards finish in any order
        assert [s.index for s in planned] == list(range(shard_count))
        assert [s.rows for s in planned][0][0] == 0 and planned[-1].rows[1] == counts.selected
        assert again.counts == counts
        assert partition_bytes(small_day) == published, shard_count
    staging = Workspace.from_settings(small_day).root / ".staging" / "traces"
    assert list(staging.iterdir()) == []  # promotion cleaned up the selections too


def test_a_retried_shard_replaces_only_its_parts_and_a_lost_one_fails_the_merge_naming_it(
    small_day,
):
    from pipelines.core.handoff import IncompleteHandoff

    planned = steps.select_trace_sample(small_day, DAY, rate=1.0, shard_count=3)
    for shard in planned:
        steps.write_trace_shard(small_day, shard)
    staged = Workspace.from_settings(small_day).traces_staging(DAY, planned[0].attempt)
    before = {p: (p.stat().st_ino, p.read_bytes()) for p in staged.root.rglob("*.parquet")}
    retried = planned[1]
    steps.write_trace_shard(small_day, retried)  # a retry on another worker
    own = {staged.part(i) for i in range(*retried.parts)} | {
        staged.quarantine_part(i) for i in range(*retried.parts)
    }
    for path, (inode, data) in before.items():
        assert path.read_bytes() == data
        assert (path.stat().st_ino != inode) == (path in own), (
            path
        )  # renamed into place: its own parts only

    lost = staged.part(retried.parts[0])
    lost.unlink()  # written where the merging worker cannot see it
    with pytest.raises(IncompleteHandoff) as raised:
        steps.merge_trace_sample(small_day, planned)
    first, end = retried.parts
    message = str(raised.value)
    assert (
        f"missing 1: shard 1 (parts {first}-{end - 1}): batch {retried.rows[0]}-{retried.rows[1] - 1} (map index 1) ({lost.name})"
        in message
    )
    assert "rerun the trace_sampling `shard` task with that map index" in message
    assert not staged.manifest.exists()  # no manifest for a partial sample
    steps.write_trace_shard(small_day, retried)
    assert steps.merge_trace_sample(small_day, planned).counts.selected == planned[-1].rows[1]
