"""The DAGs as Airflow sees them: integrity, layering, and a real `airflow dags test` run."""

import json
import os
import subprocess
import sys
from pathlib import Path
from datetime import datetime, timedelta, timezone

import pytest

from tests.conftest import ROOT

AIRFLOW = ROOT / "scripts" / "airflow.sh"


def airflow_env(home):
    return dict(
        os.environ,
        RAGWATCH_HOME=str(home),
        RAGWATCH_ANONYMIZER_KEY="dag-test-key",
        AIRFLOW_HOME=str(home / "airflow"),
    )


def test_pipelines_never_imports_airflow():
    code = (
        "import importlib, pkgutil, sys, pipelines\n"
        "for m in pkgutil.walk_packages(pipelines.__path__, 'pipelines.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n == 'airflow' or n.startswith('airflow.'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.airflow
def test_every_dag_imports_without_errors():
    sys.path.insert(0, str(ROOT / "plugins"))
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(ROOT / "dags"))
    assert bag.import_errors == {}
    assert set(bag.dags) == {"trace_sampling", "golden_build", "offline_eval", "online_eval"}
    # `make up` unpauses and waits for the ids it reads from the files: they must be the ones
    # Airflow parses.
    from deploy.local_stack import expected_dag_ids

    assert sorted(expected_dag_ids()) == sorted(bag.dags)
    for dag_id in ("trace_sampling", "offline_eval", "online_eval"):  # time schedules: backfillable
        assert type(bag.dags[dag_id].timetable).__name__ == "CronDataIntervalTimetable"
    assert bag.dags["offline_eval"].get_task("judge").pool == "ragwatch_llm"
    # Backfilled weeks run side by side: each week's gate (in finalize) waits for the week before's.
    offline = bag.dags["offline_eval"]
    assert [t.task_id for t in offline.tasks if t.depends_on_past] == ["finalize"]
    sensor = bag.dags["online_eval"].get_task("sampled_partition")
    assert sensor.mode == "reschedule"
    # It looks again soon (the day's sample lands within a minute on a small day), then ever less
    # often.
    waits = [
        sensor._get_next_poke_interval(0.0, lambda s=s: s, 0) for s in (0.0, 60.0, 9000.0)
    ]  # s since it began
    assert 15 <= waits[0] <= 30 and waits[1] > 30 and waits[2] == 300, waits
    # The online eval has the offline eval's shape: judge batches mapped in the LLM pool; the golden
    # coverage of the day's traffic beside them, which finalize publishes.
    online = bag.dags["online_eval"]
    assert [t.task_id for t in online.topological_sort()] == [
        "sampled_partition",
        "prepare",
        "batches",
        "judge",
        "coverage",
        "finalize",
        "push",
    ]
    assert online.get_task("coverage").upstream_task_ids == {"prepare"}
    assert online.get_task("finalize").upstream_task_ids == {"prepare", "judge", "coverage"}
    assert online.get_task("judge").pool == "ragwatch_llm"
    assert {"max_traces", "noise_share", "noise_mode", "noise_k"} <= set(online.params.keys())
    dag = bag.dags["trace_sampling"]
    assert [t.task_id for t in dag.topological_sort()] == [
        "select",
        "shard",
        "merge",
        "validate",
        "promote",
        "version",
    ]
    assert type(dag.get_task("shard")).__name__.endswith(
        "MappedOperator"
    )  # one task per shard of the selection
    assert dag.get_task("version").pool == "ragwatch_dvc"
    assert dag.get_task("version").outlets[0].name == "ragwatch_sampled_traces"
    assert set(dag.params.keys()) == {"sample_rate", "strata", "min_per_stratum"}
    assert type(dag.timetable).__name__ == "CronDataIntervalTimetable"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """One embedded stack for the module: the Airflow metadata DB is migrated once."""
    return tmp_path_factory.mktemp("stack")


@pytest.mark.airflow
def test_an_airflow_connection_points_every_worker_at_the_shared_llm_cache(monkeypatch):
    """Beside the DagBag test, which has imported Airflow in this process already."""
    sys.path.insert(0, str(ROOT / "plugins"))
    from ragwatch_airflow.settings import LLM_CACHE_CONN_ID, ragwatch_settings

    connection = {
        "conn_type": "postgres",
        "host": "db.internal",
        "port": 5432,
        "schema": "ragwatch_results",
        "login": "ragwatch",
        "password": "cache-s3cret/@",
    }
    monkeypatch.setenv(f"AIRFLOW_CONN_{LLM_CACHE_CONN_ID.upper()}", json.dumps(connection))
    settings = ragwatch_settings()
    assert (
        settings.llm_cache_url
        == "postgresql+psycopg://ragwatch:cache-s3cret%2F%40@db.internal:5432/ragwatch_results"
    )
    assert "s3cret" not in repr(settings)


@pytest.mark.airflow
def test_the_trace_store_connection_can_name_a_span_export_instead(monkeypatch):
    sys.path.insert(0, str(ROOT / "plugins"))
    from ragwatch_airflow.settings import TRACE_STORE_CONN_ID, ragwatch_settings

    connection = {
        "conn_type": "generic",
        "extra": {"source": "langfuse-export", "path": "s3://langfuse-exports/prod"},
    }
    monkeypatch.setenv(f"AIRFLOW_CONN_{TRACE_STORE_CONN_ID.upper()}", json.dumps(connection))
    settings = ragwatch_settings()
    assert (settings.trace_source, settings.trace_source_path) == (
        "langfuse-export",
        "s3://langfuse-exports/prod",
    )
    assert settings.trace_store_url is None

    monkeypatch.setenv(
        f"AIRFLOW_CONN_{TRACE_STORE_CONN_ID.upper()}",
        json.dumps({"conn_type": "generic", "extra": {"source": "otlp"}}),
    )
    with pytest.raises(ValueError, match="no path"):
        ragwatch_settings()


@pytest.mark.airflow
def test_airflow_dags_test_runs_trace_sampling_for_one_day(home):
    tmp_path = home
    env = airflow_env(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "demo", "seed", "--days", "2", "--per-day", "200"],
        env=env,
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    today = datetime.now(timezone.utc).date()
    # `dags test D` runs the data interval that ends at D, i.e. the day before D.
    run = subprocess.run(
        [
            str(AIRFLOW),
            "dags",
            "test",
            "trace_sampling",
            today.isoformat(),
            "--conf",
            json.dumps({"sample_rate": 0.1}),
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    yesterday = today - timedelta(days=1)
    partition = tmp_path / "workspace" / "golden" / "traces" / f"dt={yesterday}"
    manifest = json.loads((partition / "_manifest.json").read_text())
    assert manifest["sample_rate"] == 0.1 and manifest["day"] == yesterday.isoformat()
    assert manifest["sampled"] + manifest["quarantined"] == manifest["selected"] > 0
    assert (partition.parent / f"dt={yesterday}.dvc").exists()
    summary = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "demo", "summary", "--date", str(yesterday)],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert summary.returncode == 0 and "DVC version" in summary.stdout and "md5" in summary.stdout


@pytest.mark.airflow
def test_airflow_dags_test_runs_golden_build(home):
    env = airflow_env(home)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.cli",
            "corpus",
            "index",
            str(ROOT / "tests" / "data" / "corpus"),
        ],
        env=env,
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    overrides = {
        "seeds": 6,
        "multi_hop": 3,
        "adversarial": 2,
        "tool_triples": 3,
        "from_traces": 4,
        "batch_size": 5,
    }
    today = datetime.now(timezone.utc).date()
    run = subprocess.run(
        [
            str(AIRFLOW),
            "dags",
            "test",
            "golden_build",
            today.isoformat(),
            "--conf",
            json.dumps({"overrides": overrides}),
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "map_index=1" in run.stdout + run.stderr  # generation ran as mapped batches
    manifest = json.loads(
        (home / "workspace" / "golden" / "datasets" / "demo" / "_manifest.json").read_text()
    )
    assert manifest["version"] == "v1" and manifest["items"] > 10
    assert (
        manifest["sources"].get("trace", 0) >= 1
    )  # seeded from the partition trace_sampling published
    summary = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "golden", "summary"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert (
        summary.returncode == 0
        and "filter funnel" in summary.stdout
        and "single_hop" in summary.stdout
    )
    show = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "golden", "show", "--per-stratum", "1"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert show.returncode == 0
    for stratum in ("single_hop", "multi_hop", "adversarial", "tool"):
        assert stratum in show.stdout
    assert (
        "question" in show.stdout and "reference" in show.stdout and "expected call" in show.stdout
    )


def airflow_run(home, dag_id, conf=None):
    today = datetime.now(timezone.utc).date()
    command = [str(AIRFLOW), "dags", "test", dag_id, today.isoformat()] + (
        ["--conf", json.dumps(conf)] if conf else []
    )
    run = subprocess.run(
        command, env=airflow_env(home), capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return run.stdout + run.stderr


def results(home):
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{home / 'results.db'}")
    with engine.connect() as conn:
        runs = conn.execute(
            sa.text("SELECT suite, logical_date, dataset_version, report_path FROM eval_runs")
        ).all()
        dupes = conn.execute(
            sa.text(
                "SELECT count(*) - count(DISTINCT run_id || '|' || item_id || '|' || metric) FROM eval_scores"
            )
        ).scalar_one()
        failed_nan = conn.execute(
            sa.text("SELECT count(*) FROM eval_scores WHERE status = 'ok' AND value IS NULL")
        ).scalar_one()
    engine.dispose()
    return runs, dupes, failed_nan


@pytest.mark.airflow
def test_airflow_dags_test_runs_offline_eval_then_online_eval(home):
    out = airflow_run(
        home, "offline_eval", {"limit": 12, "metrics": ["faithfulness", "context_recall"]}
    )
    assert "map_index=" in out  # judge batches are mapped
    airflow_run(home, "online_eval")
    runs, dupes, ok_without_value = results(home)
    assert {r.suite for r in runs} == {"offline", "online"} and dupes == 0 and ok_without_value == 0
    for run in runs:
        assert Path(run.report_path).exists()
    metrics = (home / "metrics").glob("ragwatch-*.prom")
    text = "".join(p.read_text() for p in metrics)
    assert (
        'rag_faithfulness_score{job="ragwatch",stratum="all",suite="online"}'
        in text.replace(" ", "")
        or "rag_faithfulness_score" in text
    )
    # A rerun of the same date replaces the run's rows
    # (tests/unit/pipelines/evaluation/runs/test_online.py reruns a whole day; the stores' tests
    # replace a run on SQLite and PostgreSQL): a second `dags test` here would only add its 47 s.
