"""No parameter reaches outside its place: hostile values on every CLI command and DAG param are
refused with a clear error, and nothing is deleted or written, inside the workspace or outside
it."""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.core import inputs
from pipelines.core.settings import SettingsError, load_settings
from pipelines.core.workspace import Workspace
from pipelines.evaluation.runs.params import eval_params
from pipelines.golden.params import load_golden_params
from pipelines.traces.steps import stage_trace_sample
from tests.conftest import ROOT

HOSTILE_NAMES = [
    "..",
    "../..",
    "/etc",
    "a/b",
    ".hidden",
    "",
    "x" * 65,
    "na\x00me",
    "demo;rm -rf ~",
    "demo\n",
]
HOSTILE_DATES = [
    "../2026-01-01",
    "2026-13-01",
    "2026-02-30",
    "2026-01-01/..",
    "yesterday",
    "2026-1-1",
    "",
]
HOSTILE_STRATA = ["question", "answer", "app,question", "metadata", "app,app", "", "trace_id"]
HOSTILE_K = ["0", "-1", "abc", "1,../2", "101", ""]
HOSTILE_RUN_IDS = [
    "../x",
    "online/2026-01-01/prod",
    "offline/2026-01-01/a/b",
    "offline/2026-01-01/..",
    "offline/2026-13-01/prod",
    "offline/2026-01-01/x y",
    "",
]
SECRET = "s3cret-pw"
HOSTILE_URLS = [
    f"http://user:{SECRET}@rag.internal/ask",
    f"http://rag.internal/ask?token={SECRET}",
    f"http://rag.internal/ask?api_key={SECRET}&x=1",
    "file:///etc/passwd",
    "ftp://rag.internal/x",
    "javascript:alert(1)",
    "http://rag internal/x",
]


def cli_cases(csv_file: Path) -> list[list[str]]:
    golden_commands = [
        ["golden", "build"],
        ["golden", "summary"],
        ["golden", "release"],
        ["golden", "show"],
        ["golden", "import", str(csv_file)],
        ["golden", "review", "export"],
        ["golden", "review", "import", str(csv_file)],
    ]
    golden_commands += [
        ["golden", "stage", step] for step in ("plan", "generate", "filter", "split", "validate")
    ]
    cases = [[*command, "--name", name] for command in golden_commands for name in HOSTILE_NAMES]
    dated = [
        ["traces", "sample"],
        ["demo", "summary"],
        ["golden", "build"],
        ["golden", "stage", "plan"],
        ["eval", "offline"],
        ["eval", "online"],
    ]
    cases += [[*command, "--date", day] for command in dated for day in HOSTILE_DATES]
    cases += [
        ["traces", "sample", "--date", "2026-01-01", "--strata", strata]
        for strata in HOSTILE_STRATA
    ]
    cases += [
        ["traces", "sample", "--date", "2026-01-01", "--rate", rate] for rate in ("0", "1.5", "-1")
    ]
    cases += [["traces", "sample", "--date", "2026-01-01", "--min-per-stratum", "-1"]]
    cases += [["metrics", "retrieval", "--in", str(csv_file), "--k", k] for k in HOSTILE_K]
    cases += [["eval", "offline", "--k", k] for k in HOSTILE_K]
    cases += [["eval", "offline", "--target-url", url] for url in HOSTILE_URLS]
    cases += [
        ["eval", "offline", "--target-name", name] for name in ("../..", "a/b", "..", "", "x y")
    ]
    cases += [["eval", "offline", "--golden-version", v] for v in ("../v1", "v1/../..", "latest")]
    cases += [
        ["eval", "offline", "--metrics", "faithfulness,../x"],
        ["eval", "offline", "--limit", "0"],
    ]
    cases += [["eval", "compare", "--a", f"url={url}", "--b", "k=3"] for url in HOSTILE_URLS[:3]]
    cases += [["golden", "show", "--version", v] for v in ("../v1", "v1/../..")]
    cases += [["eval", "summary", "--suite", suite] for suite in ("../offline", "all", "")]
    cases += [
        [*command, run]
        for command in (
            ["eval", "offline", "--baseline-run"],
            ["eval", "offline", "--reference-run"],
            ["eval", "pin"],
        )
        for run in HOSTILE_RUN_IDS
    ]
    return cases


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and folder under `folder`, with a content hash: what a hostile value must leave
    alone."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        if p.is_file()
        else "dir"
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """A data workspace with a released golden set and git history, plus a file outside it."""
    home = tmp_path / "home"
    workspace = home / "workspace"
    for folder in ("golden/datasets/demo", "golden/build/demo", "golden/human", ".git"):
        (workspace / folder).mkdir(parents=True)
    (workspace / "golden" / "datasets" / "demo" / "_manifest.json").write_text("{}")
    (workspace / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "outside.txt").write_text("not ragwatch's")
    csv_file = tmp_path / "items.csv"
    csv_file.write_text(
        "question,reference_answer,gold_chunk_ids\n¿Qué?,Esto,c1\n", encoding="utf-8"
    )
    monkeypatch.setenv("RAGWATCH_HOME", str(home))
    monkeypatch.setenv("RAGWATCH_ANONYMIZER_KEY", "test-key-not-secret")
    return tmp_path, csv_file


def test_hostile_values_on_every_cli_command_are_refused_and_touch_nothing(planted):
    root, csv_file = planted
    before = snapshot(root)
    runner = CliRunner()
    cases = cli_cases(csv_file)
    for args in cases:
        result = runner.invoke(app, args)
        shown = " ".join(repr(a) for a in args)
        assert result.exit_code != 0, f"{shown} was accepted:\n{result.output}"
        assert "Invalid value" in result.output or "error:" in result.output, (
            f"{shown}: unclear error\n{result.output}"
        )
        assert "Traceback" not in result.output and SECRET not in result.output, (
            f"{shown}:\n{result.output}"
        )
        assert snapshot(root) == before, f"{shown} changed files"
    assert len(cases) > 200


def test_the_steps_refuse_the_same_values_whatever_the_entry_point(settings):
    for name in HOSTILE_NAMES:
        with pytest.raises(ValueError, match="golden-set name"):
            load_golden_params(settings, name=name)
        with pytest.raises(ValueError, match="golden-set name"):
            Workspace.from_settings(settings).golden(name)
    for strata in (["question"], ["answer"], ["app", "app"], []):
        with pytest.raises(ValueError, match="strata"):
            stage_trace_sample(settings, date(2026, 3, 1), strata=strata)
    for url in HOSTILE_URLS:
        with pytest.raises(ValueError, match="target URL") as refused:
            eval_params(settings, target_url=url)
        assert SECRET not in str(refused.value)
    for name in ("../..", "a/b", ".."):
        with pytest.raises(ValueError, match="target name"):
            eval_params(settings, target_name=name)
        with pytest.raises(ValueError, match="target name"):
            Workspace.from_settings(settings).report("offline", date(2026, 3, 1), name)
    with pytest.raises(ValueError, match="suite"):
        Workspace.from_settings(settings).run_folder("../offline", date(2026, 3, 1), "prod")
    assert not settings.home.exists()  # refused before anything was written


def test_settings_refuse_free_text_strata_and_hosts_outside_the_allow_list(monkeypatch, settings):
    monkeypatch.setenv("RAGWATCH_STRATA", '["app", "question"]')
    with pytest.raises(SettingsError, match="RAGWATCH_STRATA"):
        load_settings()
    allowed = settings.model_copy(update={"target_hosts_allowed": ["rag.internal"]})
    assert (
        eval_params(allowed, target_url="http://rag.internal:8080/ask").target_name
        == "rag.internal:8080_ask"
    )
    with pytest.raises(ValueError, match="RAGWATCH_TARGET_HOSTS_ALLOWED"):
        eval_params(allowed, target_url="http://attacker.example/ask")


def test_each_check_accepts_what_the_product_uses():
    assert inputs.golden_name("demo") == "demo" and inputs.golden_name("prod_es-2") == "prod_es-2"
    assert inputs.day("2026-03-01") == date(2026, 3, 1)
    assert inputs.strata("app,language") == ["app", "language"]
    assert inputs.cutoffs("10,1,5") == [1, 5, 10] and inputs.cutoffs([3]) == [3]
    assert inputs.target_name("reference-rag") and inputs.target_name("rag.internal:8080_ask")
    assert inputs.report_name("2026-03-01_reference-rag") == "2026-03-01_reference-rag"


HOSTILE_PARAMS = {
    "overrides": [
        {"name": "../.."},
        {"name": ".."},
        {"name": "a/b"},
        {"seeds": -1},
        {"unknown": 1},
        "demo",
        None,
    ],
    "sample_rate": [0, 1.5, -1, "0.1"],
    "strata": [["question"], ["app", "app"], [], "app", ["metadata"]],
    "min_per_stratum": [-1, 1.5, "2"],
    "golden_version": ["../v1", "v1/../../x", "latest"],
    "k": [[0], [101], ["5"], [], "5"],
    "metrics": [["nope"], ["faithfulness", "../x"], "faithfulness"],
    "target_url": [*HOSTILE_URLS[:1], "file:///etc/passwd", "ftp://x/y", "javascript:alert(1)"],
    "target_name": ["../..", "a/b", "..", "x y"],
    "fail_on_gate": ["yes", 1],
    "limit": [0, -5, "10"],
    "noise_mode": ["other", None],
    "noise_k": [0, 1000, "2"],
    "max_traces": [0, -5, "10", 1.5],
    "noise_share": [-0.1, 1.5, "0.25"],
    "target_half_width": [0, 1, -0.1, "0.03"],
    "baseline_run": [*HOSTILE_RUN_IDS[:4], "offline/x", 5],
    "reference_run": [*HOSTILE_RUN_IDS[:4], "offline/x", 5],
}


@pytest.mark.airflow
def test_every_dag_param_refuses_hostile_values_and_defaults_to_the_settings():
    sys.path.insert(0, str(ROOT / "plugins"))
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk.exceptions import ParamValidationError

    bag = DagBag(dag_folder=str(ROOT / "dags"))
    assert bag.import_errors == {}
    seen = set()
    for dag in bag.dags.values():
        for key in dag.params.keys():
            param = dag.params.get_param(key)
            param.resolve(param.value)  # the default is valid
            assert key in HOSTILE_PARAMS, f"{dag.dag_id}.{key} has no hostile values in this test"
            for value in HOSTILE_PARAMS[key]:
                with pytest.raises(ParamValidationError):
                    param.resolve(value)
                    pytest.fail(f"{dag.dag_id}.{key} accepted {json.dumps(value)}")
            seen.add(key)
    assert seen == set(HOSTILE_PARAMS)
    # One source for defaults: the trace-sampling params left null mean the settings.
    sampling = bag.dags["trace_sampling"].params
    assert all(sampling[key] is None for key in ("sample_rate", "strata", "min_per_stratum"))
    online = bag.dags["online_eval"].params
    assert all(online[key] is None for key in ("max_traces", "noise_share", "target_half_width"))
