"""The CLI as data teams use it: files in, files out, clear errors, tables."""

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from importlib.metadata import EntryPoint, entry_points

import pytest
import typer
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.cli.main import COMMANDS, add_command_groups
from ragwatch_harness.demo.traces import generate_traces
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
        40,
        seed=2,
        start=datetime(2026, 11, 1, tzinfo=timezone.utc),
        end=datetime(2026, 11, 2, tzinfo=timezone.utc),
    )
    source = tmp_path / "traces.jsonl"
    lines = [lt.trace.model_dump_json() for lt in labelled]
    lines.insert(3, '{"trace_id": "broken", "question": "mi correo es ana.lopez@example.es"}')
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "anon.jsonl"
    result = ragwatch(
        "anonymize", "--in", str(source), "--out", str(out), env={"RAGWATCH_ANONYMIZER_KEY": "k"}
    )
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 40 and set(rows[0]) == set(json.loads(lines[0]))
    written = out.read_text(encoding="utf-8")
    for lt in labelled:
        for _, value in lt.planted:
            assert value not in written
    quarantine = (tmp_path / "anon.quarantine.jsonl").read_text(encoding="utf-8")
    assert (
        '"line": 4' in quarantine
        and "ana.lopez@example.es" not in quarantine
        and "[EMAIL_" in quarantine
    )
    said = " ".join(result.stdout.split())
    assert "40 traces written" in said and "1 lines quarantined" in said and "PII replaced" in said


def test_command_groups_of_other_packages_hang_on_the_root_by_their_entry_point_names():
    root = typer.Typer()
    root.add_typer(typer.Typer(help="product"), name="traces")
    probe = EntryPoint("probe", "ragwatch_harness.cli.demo:app", COMMANDS)
    assert add_command_groups(root, [probe]) == ["probe"]
    assert [group.name for group in root.registered_groups] == ["traces", "probe"]
    listed = CliRunner().invoke(root, ["probe", "--help"], terminal_width=120)
    assert listed.exit_code == 0 and "seed" in listed.output and "drill" in listed.output
    # An installed package cannot take a product command's name.
    with pytest.raises(RuntimeError, match="reuses the command name 'traces'"):
        add_command_groups(root, [EntryPoint("traces", "ragwatch_harness.cli.bench:app", COMMANDS)])


def test_the_installed_harness_adds_bench_and_demo():
    """harness/pyproject.toml's entry points, as installing the harness records them (`make
    install`)."""
    assert {"bench", "demo"} <= {entry.name for entry in entry_points(group=COMMANDS)}
    assert {"bench", "demo"} <= {group.name for group in app.registered_groups}
    assert "Benchmarks measured side by side" in ragwatch("--help").stdout


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
    for variable in (
        "RAGWATCH_SAMPLE_RATE:",
        "RAGWATCH_JUDGE__MAX_CONCURRENCY:",
        "RAGWATCH_STRATA:",
    ):
        assert sum(line.strip().startswith(variable) for line in said.splitlines()) == 1, said
