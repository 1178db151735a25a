"""The CLI as data teams use it: files in, files out, clear errors, tables."""

import json
import os
import subprocess
import sys
from datetime import datetime, timezone

from pipelines.demo.traces import generate_traces
from tests.conftest import ROOT


def ragwatch(*args, env=None, check=True):
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=check,
    )


def test_anonymize_a_jsonl_file_keeps_fields_and_quarantines_bad_lines(tmp_path):
    labelled = generate_traces(
        40, seed=2, start=datetime(2026, 11, 1, tzinfo=timezone.utc), end=datetime(2026, 11, 2, tzinfo=timezone.utc)
    )
    source = tmp_path / "traces.jsonl"
    lines = [lt.trace.model_dump_json() for lt in labelled]
    lines.insert(3, '{"trace_id": "broken", "question": "mi correo es ana.lopez@example.es"}')
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "anon.jsonl"
    result = ragwatch("anonymize", "--in", str(source), "--out", str(out), env={"RAGWATCH_ANONYMIZER_KEY": "k"})
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 40 and set(rows[0]) == set(json.loads(lines[0]))
    written = out.read_text(encoding="utf-8")
    for lt in labelled:
        for _, value in lt.planted:
            assert value not in written
    quarantine = (tmp_path / "anon.quarantine.jsonl").read_text(encoding="utf-8")
    assert '"line": 4' in quarantine and "ana.lopez@example.es" not in quarantine and "[EMAIL_" in quarantine
    said = " ".join(result.stdout.split())
    assert "40 traces written" in said and "1 lines quarantined" in said and "PII replaced" in said


def test_bench_anonymize_reports_throughput_ratio_and_recall_side_by_side():
    result = ragwatch("bench", "anonymize", "--traces", "150", "--clean-traces", "40")
    assert "presidio" in result.stdout.lower() and "MB/s" in result.stdout and "EMAIL" in result.stdout
    assert "clean" in result.stdout.lower()


def test_a_role_setting_given_alone_keeps_the_role_defaults(monkeypatch):
    from pipelines.core.settings import load_settings

    monkeypatch.setenv("RAGWATCH_GENERATOR__BASE_URL", "http://vllm-gen:8000/v1")
    settings = load_settings()
    assert (settings.generator.base_url, settings.generator.model) == (
        "http://vllm-gen:8000/v1",
        "Qwen/Qwen2.5-7B-Instruct",
    )
    assert settings.judge.base_url == "http://localhost:8000/v1"


def test_a_bad_setting_is_one_line_naming_the_variable_never_a_traceback(tmp_path):
    env = {
        "RAGWATCH_HOME": str(tmp_path),
        "RAGWATCH_SAMPLE_RATE": "2",
        "RAGWATCH_JUDGE__MAX_CONCURRENCY": "0",
        "RAGWATCH_STRATA": '["question"]',
        "RAGWATCH_PUSHGATEWAY_URL": "http://user:s3cret-pw@gateway:9091",
    }
    result = ragwatch("eval", "summary", env=env, check=False)
    assert result.returncode == 1
    said = result.stdout + result.stderr
    assert "Traceback" not in said and "s3cret-pw" not in said
    for variable in ("RAGWATCH_SAMPLE_RATE:", "RAGWATCH_JUDGE__MAX_CONCURRENCY:", "RAGWATCH_STRATA:"):
        assert sum(line.strip().startswith(variable) for line in said.splitlines()) == 1, said
