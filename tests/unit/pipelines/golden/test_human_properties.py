"""Properties of the importers over files hypothesis makes up: hand-written golden items (CSV and
JSONL) and `ragwatch anonymize`'s JSONL of traces.

- a golden file of any rows never crashes the import: each row becomes an item or a problem that
  names its row, and the same rows read the same from CSV as from JSONL;
- a JSONL of any bytes never crashes `ragwatch anonymize`: every non-blank line is written or
  quarantined with its number, and no value planted in a line survives in either file.

Run with `--hypothesis-show-statistics` to see how many inputs each property tried.
"""

import csv
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.core.records import Chunk, content_hash
from pipelines.golden.human import import_human_items

SETTINGS = settings(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
CHUNKS = [
    Chunk(
        chunk_id=f"doc#{i}",
        document="doc",
        section="s",
        ordinal=i,
        type="md",
        date="2026-11-01",
        language="en",
        text=text,
        content_hash=content_hash(text),
    )
    for i, text in enumerate(
        ["Airflow pools limit concurrency of tasks.", "DVC pushes data to a remote."]
    )
]
COLUMNS = (
    "question",
    "reference_answer",
    "gold_chunk_ids",
    "gold_passages",
    "qtype",
    "split",
    "language",
    "variant",
    "trace_id",
)

# Text a file can hold: no lone surrogates (not encodable), no NUL or CR (csv rewrites line ends).
file_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00\r"), max_size=30)
cell = st.one_of(
    file_text,
    st.sampled_from(
        [
            "",
            "doc#0",
            "doc#1",
            "doc#0|doc#1",
            '["doc#0"]',
            "[doc#0",
            "[1, 2]",
            "single_hop",
            "tool",
            "nonsense",
            "dev",
            "test",
            "Airflow pools limit concurrency",
            "DVC pushes data",
        ]
    ),
)
rows = st.lists(
    st.fixed_dictionaries({}, optional={column: cell for column in COLUMNS}), min_size=1, max_size=5
)


def write_both(tmp_path, name, rows_):
    as_csv, as_jsonl = tmp_path / f"{name}.csv", tmp_path / f"{name}.jsonl"
    with as_csv.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows_)
    as_jsonl.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows_), encoding="utf-8"
    )
    return as_csv, as_jsonl


@settings(SETTINGS, max_examples=200)
@given(rows=rows)
def test_any_golden_file_imports_row_by_row_and_csv_reads_as_jsonl(tmp_path_factory, rows):
    tmp_path = tmp_path_factory.mktemp("golden")
    # A CSV row holds "" where a JSON object has no key: compare like with like.
    rows = [{column: row.get(column, "") for column in COLUMNS} for row in rows]
    reports = [
        import_human_items(path, CHUNKS, corpus_version="v1", created_at="2026-11-30")
        for path in write_both(tmp_path, "items", rows)
    ]
    for report in reports:
        assert len(report.items) <= len(rows)
        rows_with_problems = {problem.split(":")[0] for problem in report.problems}
        assert len(report.items) + len(rows_with_problems) == len(rows)
        assert all(set(item.gold_chunk_ids) <= {"doc#0", "doc#1"} for item in report.items)
    from_csv, from_jsonl = reports
    assert [i.model_dump(exclude={"source_ref", "item_id"}) for i in from_csv.items] == [
        i.model_dump(exclude={"source_ref", "item_id"}) for i in from_jsonl.items
    ]


TRACE = {"trace_id": "t", "ts": "2026-11-29T10:00:00Z", "question": "q", "answer": "a"}
PLANTED = "lucia.fernandez@gmail.com"
lines = st.lists(
    st.one_of(
        st.binary(max_size=60),
        st.builds(
            lambda q: json.dumps(
                {**TRACE, "question": f"{q} {PLANTED}"}, ensure_ascii=False
            ).encode(),
            file_text,
        ),
        st.builds(lambda junk: junk + PLANTED.encode() + b"\xff", st.binary(max_size=20)),
    ).map(lambda line: line.replace(b"\n", b" ").replace(b"\r", b" ")),
    min_size=1,
    max_size=6,
)
"""Lines of a JSONL file as they come: well-formed traces, broken JSON, other encodings, bare
bytes."""


@settings(SETTINGS, max_examples=25)
@given(lines=lines)
def test_any_jsonl_anonymizes_line_by_line(tmp_path_factory, lines):
    """The command in this process (typer's runner): a `ragwatch` process per example cost 2 s of
    imports each; tests/unit/pipelines/cli/test_anonymize.py runs the command as a process, exit
    codes and all."""
    tmp_path = tmp_path_factory.mktemp("anonymize")
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    env = {"RAGWATCH_ANONYMIZER_KEY": "k", "RAGWATCH_HOME": str(tmp_path / "home")}
    result = CliRunner().invoke(app, ["anonymize", "--in", str(source), "--out", str(out)], env=env)
    assert result.exit_code == 0, result.output[-2000:] + repr(result.exception)
    written = out.read_bytes().splitlines()
    quarantine = tmp_path / "out.quarantine.jsonl"
    rejected = (
        [json.loads(row) for row in quarantine.read_bytes().splitlines()]
        if quarantine.exists()
        else []
    )
    non_blank = [n for n, line in enumerate(lines, start=1) if line.strip()]
    assert len(written) + len(rejected) == len(non_blank)
    assert {row["line"] for row in rejected} <= set(non_blank)
    assert PLANTED.encode() not in out.read_bytes() + (quarantine.read_bytes() if rejected else b"")
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".partial") == []
