"""Faults that need no Airflow stack: real processes killed with SIGKILL, then what a user runs
next.

Each case is compared with an undisturbed control run of the same day on a copy of the same
workspace: nothing lost, nothing duplicated, no wrong version, gauges equal to the results store.

- `ragwatch traces sample` killed while it selects, while it validates its staged partition and
  inside `dvc add`: the rerun publishes the control's bytes (manifest, parts, `.dvc` record), one
  version, no staging left.
- `ragwatch eval offline` killed while it judges and after it saved the run, before the push: the
  rerun leaves one run row, the control's scores and baseline, and gauges equal to the store.
- the results PostgreSQL killed while the eval's transaction writes: the eval fails saying what
  happened and what to run; after a restart the rerun leaves one run row and the control's scores.
- the Pushgateway killed before a push: the push fails loudly, the scores stay in the store; after a
  restart, `ragwatch eval push` makes the gauges equal to the store again.

A moment is read off the file system (a folder or file a step writes), the process tree (a `dvc`
child) or the database (a transaction waiting on a lock), never a guessed sleep. Each case prints
its time to recover: from the restart (or the rerun's start) to a good result.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

import psutil
import pytest
import sqlalchemy as sa

from pipelines.core.settings import Settings
from pipelines.core.versioning import git
from pipelines.core.workspace import Workspace
from pipelines.corpus.steps import index_corpus
from pipelines.evaluation.outputs.push import as_pushed, gauge_name, read_back
from pipelines.evaluation.runs.offline import run_offline_eval
from pipelines.evaluation.runs.params import eval_params
from pipelines.evaluation.statistics.aggregates import aggregate
from pipelines.golden import steps as golden_steps
from pipelines.golden.params import load_golden_params
from pipelines.stores.results import ResultsStore, run_id
from pipelines.stores.traces import TraceStore
from pipelines.traces.steps import run_trace_sampling
from ragwatch_harness.demo.traces import generate_store_rows
from tests.conftest import ROOT
from tests.support.services import fresh_database, start_postgres, start_pushgateway
from tests.unit.pipelines.evaluation.runs.test_offline import SMALL as GOLDEN

pytestmark = pytest.mark.services

SAMPLE_DAY = date(2026, 11, 20)
BASELINE_DAY, EVAL_DAY = date(2026, 11, 23), date(2026, 11, 30)
EVAL_RUN = run_id("offline", EVAL_DAY, "reference-rag")
# One judge metric keeps each eval near ten seconds; its 30 test items make two judge batches of 25
# and 5.
EVAL = ["eval", "offline", "--date", str(EVAL_DAY), "--metrics", "faithfulness"]
SAMPLE = ["traces", "sample", "--date", str(SAMPLE_DAY), "--rate", "1.0"]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A home with an indexed corpus, a released golden set, a day of production traces (English and
    Spanish) and the baseline offline run, which each case copies."""
    root = tmp_path_factory.mktemp("faults")
    settings = home_settings(root)
    shutil.copytree(ROOT / "tests" / "data" / "corpus", root / "corpus")
    index_corpus(settings, root / "corpus")
    golden_steps.build_golden(
        settings, load_golden_params(settings, **GOLDEN), logical_date=BASELINE_DAY
    )
    traces = TraceStore.from_settings(settings, read_only=False)
    traces.create_table()
    traces.insert_rows(generate_store_rows(days=1, per_day=40, end=SAMPLE_DAY, seed=3))
    traces.engine.dispose()
    run_offline_eval(
        settings, eval_params(settings, metrics=["faithfulness"]), logical_date=BASELINE_DAY
    )
    return root


def home_settings(root: Path, **update) -> Settings:
    return Settings(
        home=root / "home",
        anonymizer_key="fault-test-key",
        dvc_remote=str(root / "remote"),
        **update,
    )


def copy_of(base: Path, into: Path) -> Path:
    """An independent copy of the base home and its DVC remote."""
    for part in ("home", "remote"):
        shutil.copytree(base / part, into / part, symlinks=True)
    return into


def env_of(root: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "RAGWATCH_HOME": str(root / "home"),
        "RAGWATCH_ANONYMIZER_KEY": "fault-test-key",
        "RAGWATCH_DVC_REMOTE": str(root / "remote"),
        **extra,
    }


def ragwatch(root: Path, *args: str, **env: str) -> subprocess.Popen:
    """`ragwatch ...` in a session of its own, so a kill takes its children (`dvc`, `git`) with
    it."""
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", *args],
        cwd=root,
        env=env_of(root, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def finished(process: subprocess.Popen) -> tuple[int, str]:
    output, _ = process.communicate(timeout=120)
    return process.returncode, output


def completed(root: Path, *args: str, **env: str) -> tuple[str, float]:
    """Run `ragwatch ...` to its end; its output and seconds taken."""
    started = time.monotonic()
    code, output = finished(ragwatch(root, *args, **env))
    assert code == 0, output
    return output, time.monotonic() - started


def wait_until(
    moment: Callable[[], bool], process: subprocess.Popen | None, what: str, timeout_s: float = 60
) -> None:
    """Poll for `moment`; fail naming it when `process` ended first or it never came."""
    deadline = time.monotonic() + timeout_s
    while not moment():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the command ended before {what}:\n{process.communicate()[0]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout_s:.0f} s")
        time.sleep(0.005)


def kill_at(process: subprocess.Popen, moment: Callable[[], bool], what: str) -> None:
    wait_until(moment, process, what)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def recovered(case: str, seconds: float) -> None:
    print(f"\n{case}: recovered in {seconds:.1f} s")


# --- `ragwatch traces sample` ---------------------------------------------------------------------


def staged(workspace: Workspace, pattern: str) -> Callable[[], bool]:
    return lambda: any(workspace.traces_staging_root.glob(pattern))


def merged_partition(workspace: Workspace) -> Callable[[], bool]:
    return lambda: any(
        p.parent.suffix != ".selection"
        for p in workspace.traces_staging_root.glob("dt=*/_manifest.json")
    )


def running_dvc_add(process: subprocess.Popen) -> Callable[[], bool]:
    def moment() -> bool:
        try:
            children = psutil.Process(process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return False
        for child in children:
            try:
                line = child.cmdline()
            except psutil.Error:
                continue
            if "dvc" in line and "add" in line:
                return True
        return False

    return moment


def published_bytes(workspace: Workspace, day: date) -> dict[str, str]:
    """sha256 of every file of the day's partition and of its `.dvc` record."""
    partition = workspace.traces_partition(day).root
    files = [
        *sorted(p for p in partition.rglob("*") if p.is_file()),
        workspace.root / workspace.dvc_file(partition),
    ]
    return {
        str(p.relative_to(workspace.root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in files
    }


def versions_of(workspace: Workspace, day: date) -> list[str]:
    record = workspace.dvc_file(workspace.relative(workspace.traces_partition(day).root))
    return git("log", "--format=%h", "--", str(record), cwd=workspace.root).split()


def test_a_sample_killed_at_three_moments_then_rerun_publishes_the_controls_bytes_once(
    base, tmp_path
):
    control = copy_of(base, tmp_path / "control")
    run_trace_sampling(
        home_settings(control), SAMPLE_DAY, rate=1.0
    )  # what the command runs, in this process
    expected = published_bytes(Workspace(control / "home" / "workspace"), SAMPLE_DAY)

    faulted = copy_of(base, tmp_path / "faulted")
    workspace = Workspace(faulted / "home" / "workspace")
    for moment, what in (
        (staged(workspace, "dt=*.selection"), "the selection was written"),
        (merged_partition(workspace), "the staged partition was merged (validation runs)"),
    ):
        kill_at(ragwatch(faulted, *SAMPLE), moment, what)
        assert not workspace.traces_partition(SAMPLE_DAY).root.exists(), what  # nothing published
    sample = ragwatch(faulted, *SAMPLE)
    kill_at(sample, running_dvc_add(sample), "`dvc add` ran")
    assert not workspace.has_traces(
        SAMPLE_DAY, versioned=True
    )  # promoted, unversioned: readers wait

    output, seconds = completed(faulted, *SAMPLE)
    assert published_bytes(workspace, SAMPLE_DAY) == expected, output
    assert len(versions_of(workspace, SAMPLE_DAY)) == 1
    assert workspace.has_traces(SAMPLE_DAY, versioned=True)
    assert not any(workspace.traces_staging_root.iterdir()), (
        "a killed run's staging was left behind"
    )
    recovered("traces sample killed 3 times", seconds)


# --- `ragwatch eval offline` ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def control_eval(base, tmp_path_factory) -> dict:
    """The undisturbed eval of EVAL_DAY: where it ran, what the store holds of it (`stored`)."""
    control = copy_of(base, tmp_path_factory.mktemp("control-eval"))
    settings = home_settings(control)
    run_offline_eval(
        settings, eval_params(settings, metrics=["faithfulness"]), logical_date=EVAL_DAY
    )
    return {"root": control, **stored(home_settings(control))}


def stored(settings: Settings) -> dict:
    """What the results store holds of EVAL_RUN: its rows, scores' digest, baseline and gauges it
    implies."""
    store = ResultsStore.from_settings(settings)
    try:
        with store.engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT count(*) FROM eval_runs WHERE run_id = :r"), {"r": EVAL_RUN}
            ).scalar()
        run, scores = store.get_run(EVAL_RUN), store.scores(EVAL_RUN)
    finally:
        store.dispose()
    keyed = sorted(
        (s.item_id, s.metric, s.stratum, s.status, s.value, s.error or "") for s in scores
    )
    gauges = {
        (gauge_name(a.metric), a.stratum): a.mean
        for a in as_pushed(aggregate(scores))
        if a.mean is not None
    }
    return {
        "rows": rows,
        "scores": len(scores),
        "digest": hashlib.sha256(json.dumps(keyed).encode()).hexdigest(),
        "baseline": baseline_of(run),
        "gauges": gauges,
    }


def baseline_of(run) -> str | None:
    comparisons = (run.gate or {}).get("comparisons", []) if run else []
    return next((c["run_id"] for c in comparisons if c["role"] == "baseline"), None)


def pushed_gauges(gateway_url: str) -> dict[tuple[str, str], float]:
    [group] = [g for g in read_back(gateway_url) if g["labels"].get("target") == "reference-rag"]
    return {
        (name, sample["labels"]["stratum"]): sample["value"]
        for name, samples in group["metrics"].items()
        if name.endswith("_score") and name.startswith("rag_")
        for sample in samples
    }


def test_an_eval_killed_while_judging_and_after_saving_then_rerun_matches_the_control(
    base, control_eval, pushgateway, tmp_path
):
    assert control_eval["rows"] == 1 and control_eval["scores"] > 0 and control_eval["baseline"]
    faulted = copy_of(base, tmp_path)
    settings = home_settings(faulted)
    workspace = Workspace.from_settings(settings)
    run_folder = workspace.run_folder("offline", EVAL_DAY, "reference-rag")
    gateway = {"RAGWATCH_PUSHGATEWAY_URL": pushgateway.url}

    kill_at(
        ragwatch(faulted, *EVAL, **gateway),
        run_folder.scores("judge-000000").exists,
        "the first batch judged",
    )
    assert stored(settings)["rows"] == 0
    report = workspace.report("offline", EVAL_DAY, "reference-rag")
    kill_at(
        ragwatch(faulted, *EVAL, **gateway),
        report.exists,
        "the run was saved and its report written",
    )
    assert stored(settings)["rows"] == 1 and not read_back(pushgateway.url)  # saved, never pushed

    _, seconds = completed(faulted, *EVAL, **gateway)
    after = stored(settings)
    assert {k: after[k] for k in ("rows", "digest", "baseline")} == {
        k: control_eval[k] for k in ("rows", "digest", "baseline")
    }
    assert pushed_gauges(pushgateway.url) == after["gauges"] == control_eval["gauges"]
    recovered("eval offline killed while judging and after saving", seconds)


# --- the results PostgreSQL -----------------------------------------------------------------------


def kill_cluster(pg) -> None:
    """SIGKILL the postmaster and every backend, as the machine's OOM killer or a lost node
    would."""
    postmaster = psutil.Process(int((pg.cluster.data / "postmaster.pid").read_text().split()[0]))
    for process in [postmaster, *postmaster.children(recursive=True)]:
        process.kill()
    psutil.wait_procs([postmaster], timeout=10)


def copy_baseline(source: Settings, target: Settings) -> None:
    """The baseline run into another results store, as it was saved."""
    baseline_id = run_id("offline", BASELINE_DAY, "reference-rag")
    old, new = ResultsStore.from_settings(source), ResultsStore.from_settings(target)
    new.create()
    new.save_run(old.get_run(baseline_id), old.scores(baseline_id))
    old.dispose()
    new.dispose()


def test_the_results_postgres_killed_mid_write_loses_nothing_and_the_rerun_matches_the_control(
    base, control_eval, tmp_path
):
    pg = start_postgres()
    try:
        url = fresh_database(pg, "faults")
        faulted = copy_of(base, tmp_path)
        settings = home_settings(faulted, results_url=url)
        copy_baseline(home_settings(base), settings)
        holder, watcher = sa.create_engine(url), sa.create_engine(url, isolation_level="AUTOCOMMIT")
        waiting = sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE%eval_runs%'"
        )
        lock, watch = holder.connect(), watcher.connect()
        # Reads pass, writes to eval_runs wait: the eval's transaction stops inside its write,
        # deterministically.
        lock.execute(sa.text("LOCK TABLE eval_runs IN EXCLUSIVE MODE"))
        process = ragwatch(faulted, *EVAL, RAGWATCH_RESULTS_URL=url)
        wait_until(
            lambda: watch.execute(waiting).scalar() > 0,
            process,
            "the eval's write waited on eval_runs",
        )
        kill_cluster(pg)
        for engine, connection in ((holder, lock), (watcher, watch)):
            connection.invalidate()  # its server is gone: nothing to roll back
            engine.dispose()
        code, output = finished(process)
        assert code != 0
        assert "results DB" in output and "Traceback" not in output, output
        assert f"ragwatch eval offline --date {EVAL_DAY}" in output, output

        started = time.monotonic()
        pg.start()
        completed(faulted, *EVAL, RAGWATCH_RESULTS_URL=url)
        after = stored(settings)
        assert {k: after[k] for k in ("rows", "digest", "baseline")} == {
            k: control_eval[k] for k in ("rows", "digest", "baseline")
        }
        recovered("results PostgreSQL killed mid-write", time.monotonic() - started)
    finally:
        pg.stop()


# --- the Pushgateway ------------------------------------------------------------------------------


def test_a_pushgateway_killed_before_the_push_fails_loudly_and_eval_push_restores_the_gauges(
    control_eval, tmp_path
):
    faulted = control_eval["root"]  # a push only reads the store
    settings = home_settings(faulted)
    persisted = tmp_path / "pushgateway.db"  # as docker-compose.yml runs it
    gateway = start_pushgateway(persistence=persisted)
    try:
        completed(faulted, "eval", "push", "--run", EVAL_RUN, RAGWATCH_PUSHGATEWAY_URL=gateway.url)
        gateway.process.send_signal(signal.SIGKILL)
        gateway.process.wait()

        code, output = finished(
            ragwatch(
                faulted, "eval", "push", "--run", EVAL_RUN, RAGWATCH_PUSHGATEWAY_URL=gateway.url
            )
        )
        assert (
            code != 0
            and "scores are safe in the results DB" in output
            and "refused" in output.lower()
        ), output

        started = time.monotonic()
        gateway = start_pushgateway(persistence=persisted, port=gateway.port)
        lost = not read_back(gateway.url)  # pushed less than a persistence interval before the kill
        completed(faulted, "eval", "push", "--run", EVAL_RUN, RAGWATCH_PUSHGATEWAY_URL=gateway.url)
        assert pushed_gauges(gateway.url) == stored(settings)["gauges"] == control_eval["gauges"]
        assert len([g for g in read_back(gateway.url) if g["labels"]["job"] == "ragwatch"]) == 1
        recovered(
            f"Pushgateway killed (groups lost on restart: {lost})", time.monotonic() - started
        )
    finally:
        gateway.stop()
