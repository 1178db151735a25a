"""A run killed between promoting data and versioning it, with the real `dvc` CLI: no reader takes
the new data for the old version, and the next run versions it.

The kill is reproduced by the state it leaves: a promotion with no version step after it (killed
before `dvc add`), a bare `dvc add` (killed right after it), or a version step whose `dvc push`
fails.
"""

import os
import subprocess
import sys
from datetime import date, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.core.versioning import VersioningError, dvc, git, has_tag
from pipelines.core.workspace import PartitionPaths, StaleVersion, Workspace
from pipelines.evaluation.runs.online import _dataset_version, prepare_online_eval
from pipelines.evaluation.runs.params import online_params
from pipelines.golden.dataset import load_golden_items, released_version
from pipelines.golden.steps import recent_trace_questions, release_golden
from pipelines.stores.partitions import promote, write_manifest
from pipelines.traces import steps
from tests.conftest import ROOT
from tests.support.workspace_data import write_promoted_partition, write_staged_golden

DAY = date(2026, 11, 20)


def resample(workspace: Workspace, day: date, rows: int) -> None:
    """Stage another sample of `day` and promote it, as `promote_trace_sample` does: its version
    step never runs."""
    staged = PartitionPaths(workspace.traces_staging(day, "resample").root)
    staged.root.mkdir(parents=True)
    table = pa.table(
        {
            "trace_id": [f"{day}-r{i}" for i in range(rows)],
            "app": ["soporte"] * rows,
            "language": ["es"] * rows,
            "question": [f"¿pregunta {i}?" for i in range(rows)],
        }
    )
    pq.write_table(table, staged.part(0))
    write_manifest(staged.manifest, {"day": day.isoformat(), "sampled": rows, "quarantined": 0})
    promote(staged.root, workspace.traces_partition(day).root)


def version(settings, day: date):
    partition = Workspace.from_settings(settings).relative(
        Workspace.from_settings(settings).traces_partition(day).root
    )
    return steps.version_trace_sample(settings, steps.PromotedSample(day=day, partition=partition))


@pytest.fixture
def versioned(settings, tmp_path):
    """A workspace whose day DAY was sampled and versioned once."""
    settings = settings.model_copy(update={"dvc_remote": str(tmp_path / "remote")})
    workspace = Workspace.from_settings(settings)
    write_promoted_partition(workspace, DAY)
    first = version(settings, DAY)
    assert workspace.traces_version(DAY) == first.dvc_md5 and workspace.has_traces(
        DAY, versioned=True
    )
    return settings, workspace, first


def assert_refused(settings, workspace: Workspace, day: date) -> None:
    remedy = f"`ragwatch traces version --date {day}`"
    assert not workspace.has_traces(day) and not workspace.has_traces(
        day, versioned=True
    )  # the sensor waits
    with pytest.raises(StaleVersion, match=remedy):
        prepare_online_eval(settings, day, online_params(settings))
    with pytest.raises(StaleVersion, match=remedy):
        recent_trace_questions(workspace, day + timedelta(days=1), days=1, n=5)


def test_a_resample_killed_in_or_before_versioning_is_refused_until_a_run_versions_it(
    versioned,
):
    settings, workspace, first = versioned
    resample(workspace, DAY, rows=7)  # killed before `dvc add`
    assert (
        workspace.dvc_md5(workspace.traces_partition(DAY).root) == first.dvc_md5
    )  # the old sample's record
    assert_refused(settings, workspace, DAY)

    partition = workspace.relative(workspace.traces_partition(DAY).root)
    dvc("add", str(partition), cwd=workspace.root)  # the retry, killed right after its `dvc add`
    assert workspace.dvc_md5(workspace.traces_partition(DAY).root) != first.dvc_md5
    assert_refused(settings, workspace, DAY)

    next_day = DAY + timedelta(days=1)  # the next scheduled run, of another day
    write_promoted_partition(workspace, next_day)
    version(settings, next_day)
    md5 = workspace.traces_version(DAY)
    assert md5 is not None and md5 != first.dvc_md5 and workspace.has_traces(DAY, versioned=True)
    assert _dataset_version(workspace, DAY) == f"traces/dt={DAY}@{md5[:12]}"
    assert {q["question"] for q in recent_trace_questions(workspace, next_day, days=1, n=3)} <= {
        f"¿pregunta {i}?" for i in range(7)
    }
    assert git("status", "--porcelain", cwd=workspace.root) == ""  # both days committed
    assert steps.unfinished_versions(workspace) == []


def test_a_day_promoted_not_versioned_reads_unversioned_until_the_named_command_runs(
    settings, tmp_path
):
    workspace = Workspace.from_settings(settings)
    write_promoted_partition(workspace, DAY)
    assert workspace.has_traces(DAY) and not workspace.has_traces(
        DAY, versioned=True
    )  # the sensor waits
    assert workspace.traces_version(DAY) is None  # no .dvc file: no version to contradict
    assert _dataset_version(workspace, DAY) == f"traces/dt={DAY}"

    env = {
        **os.environ,
        "RAGWATCH_HOME": str(settings.home),
        "RAGWATCH_DVC_REMOTE": str(tmp_path / "remote"),
    }
    command = [sys.executable, "-m", "pipelines.cli", "traces", "version", "--date", str(DAY)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    md5 = workspace.traces_version(DAY)
    assert done.returncode == 0 and md5 is not None and md5 in done.stdout, (
        done.stdout + done.stderr
    )
    assert workspace.has_traces(DAY, versioned=True)


def test_a_release_killed_after_its_promotion_is_refused_then_completed_under_its_own_version(
    settings, tmp_path
):
    settings = settings.model_copy(update={"dvc_remote": str(tmp_path / "remote")})
    workspace = Workspace.from_settings(settings)
    write_staged_golden(workspace, "demo", items=6)
    assert release_golden(settings, "demo").version == "v1"
    write_staged_golden(workspace, "demo", items=9)
    unreachable = tmp_path / "not-a-folder"
    unreachable.write_text("")
    with pytest.raises(VersioningError, match="push"):
        release_golden(settings.model_copy(update={"dvc_remote": str(unreachable)}), "demo")
    assert not workspace.golden(
        "demo"
    ).staged.exists()  # promoted: the manifest says v2, no tag says so
    with pytest.raises(StaleVersion, match="ragwatch golden release --name demo"):
        released_version(settings, "demo")  # what the offline eval asks first

    completed = release_golden(
        settings, "demo"
    )  # the release task's retry: nothing staged any more
    assert (completed.version, completed.items) == ("v2", 9) and has_tag(
        workspace, "golden/demo/v2"
    )
    assert (
        released_version(settings, "demo") == "v2"
        and len(load_golden_items(settings, "demo", "v2")) == 9
    )
    assert not has_tag(workspace, "golden/demo/v3")
