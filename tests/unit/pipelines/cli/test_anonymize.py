"""`ragwatch anonymize` on files as they come, and quarantined rows anonymized before they are
clipped."""

import json
import os
import subprocess
import sys

from pipelines.privacy.anonymizer import Anonymizer
from pipelines.traces.parse import Rejection
from pipelines.traces.prepare import QUARANTINE_CLIP_CHARS, _quarantine_row
from tests.conftest import ROOT

TRACE = {
    "trace_id": "t-{n}",
    "ts": "2026-11-29T10:00:00Z",
    "question": "Soy Lucía Fernández, mi correo es lucia.fernandez@gmail.com",
    "answer": "ok",
    "model": "m",
    "app": "a",
    "language": "es",
}


def anonymize(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAGWATCH_ANONYMIZER_KEY": "k", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "anonymize", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )


def line(n: int) -> bytes:
    return (json.dumps({**TRACE, "trace_id": f"t-{n}"}, ensure_ascii=False) + "\n").encode()


def test_a_line_in_another_encoding_is_quarantined_with_its_number_and_the_rest_goes_through(
    tmp_path,
):
    latin1 = json.dumps(
        {**TRACE, "question": "Soy José, escríbeme a jose.perez@gmail.com"}, ensure_ascii=False
    )
    source = tmp_path / "traces.jsonl"
    source.write_bytes(
        b"\xef\xbb\xbf" + line(1) + line(2) + latin1.encode("latin-1") + b"\n" + line(4)
    )
    out = tmp_path / "anon.jsonl"
    result = anonymize("--in", str(source), "--out", str(out))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(row) for row in out.read_text(encoding="utf-8").splitlines()]
    assert [row["trace_id"] for row in rows] == [
        "t-1",
        "t-2",
        "t-4",
    ]  # a BOM on line 1 is no reason to drop it
    (quarantined,) = [
        json.loads(row) for row in (tmp_path / "anon.quarantine.jsonl").read_text().splitlines()
    ]
    assert (
        quarantined["line"] == 3
        and "not UTF-8" in quarantined["reason"]
        and "0xe9" in quarantined["reason"]
    )
    assert "jose.perez@gmail.com" not in quarantined["raw"] and "[EMAIL_" in quarantined["raw"]
    assert "lucia.fernandez@gmail.com" not in out.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "anon.jsonl",
        "anon.quarantine.jsonl",
        "traces.jsonl",
    ]


def test_a_run_that_fails_leaves_no_partial_files(tmp_path):
    source = tmp_path / "traces.jsonl"
    source.write_bytes(line(1))
    result = anonymize(
        "--in",
        str(source),
        "--out",
        str(tmp_path / "anon.jsonl"),
        "--quarantine",
        str(tmp_path / "missing-dir" / "q.jsonl"),
    )
    assert result.returncode != 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces.jsonl"]


def test_a_quarantined_field_is_anonymized_before_it_is_clipped():
    email = "lucia.fernandez@gmail.com"
    # The clip point falls inside the address: clipping first would keep "lucia.fernan", which no
    # detector recognises as anything.
    answer = "x " * ((QUARANTINE_CLIP_CHARS - 12) // 2) + email + " y" * 5000
    raw = {"trace_id": "t-9", "question": f"Hola, soy Lucía Fernández ({email})", "answer": answer}
    row = _quarantine_row(
        Anonymizer(b"k"), raw, Rejection("field_too_large", "answer", "too large")
    )
    fields = json.loads(row["raw"])
    assert "lucia" not in row["raw"].lower() and "fernan" not in row["raw"].lower()
    assert fields["answer"].endswith(
        f"[clipped by ragwatch: {len(answer):,} characters in the store]"
    )
    assert len(fields["answer"]) < QUARANTINE_CLIP_CHARS + 100
    email_token = fields["question"].split("(")[1].rstrip(")")
    assert (
        email_token.startswith("[EMAIL_") and email_token not in fields["answer"]
    )  # the cut token is dropped whole


def test_a_short_quarantined_field_is_not_marked_as_clipped():
    raw = {"trace_id": "t-1", "question": "mi DNI es 12345678Z", "answer": None}
    fields = json.loads(
        _quarantine_row(Anonymizer(b"k"), raw, Rejection("missing_field", "answer", "-"))["raw"]
    )
    assert fields["question"].startswith("mi DNI es [DNI_") and "clipped" not in fields["question"]
    assert fields["answer"] is None and sorted(fields) == ["answer", "question", "trace_id"]
