"""DVC for real: the published partition is tracked, pushed to a local remote, and committed."""

import subprocess
from datetime import date, timedelta

import pytest
import yaml

from pipelines.core.settings import SettingsError, load_settings
from pipelines.core.versioning import dvc, git
from pipelines.stores.traces import TraceStore
from pipelines.traces import steps
from ragwatch_harness.demo.traces import generate_store_rows

DAY = date(2026, 11, 20)


def test_a_published_partition_is_pushed_to_the_remote_and_reruns_add_no_commit(settings, tmp_path):
    remote = tmp_path / "remote"
    settings = settings.model_copy(update={"dvc_remote": str(remote)})
    writer = TraceStore.from_settings(settings, read_only=False)
    writer.create_table()
    writer.insert_rows(
        generate_store_rows(days=1, per_day=300, end=DAY + timedelta(days=1), seed=9)
    )

    first = steps.run_trace_sampling(settings, DAY)
    workspace = settings.resolved_workspace
    dvc_file = workspace / "golden" / "traces" / f"dt={DAY}.dvc"
    out = yaml.safe_load(dvc_file.read_text())["outs"][0]
    assert out["md5"] == first.version.dvc_md5 and out["md5"].endswith(".dir")
    pushed = [p for p in remote.rglob("*") if p.is_file()]
    assert len(pushed) >= 4  # the .dir listing plus parquet files and the manifest
    assert "Cache and remote 'storage' are in sync" in dvc("status", "-c", cwd=workspace)
    assert git("status", "--porcelain", cwd=workspace).strip() == ""

    commits = git("rev-list", "--count", "HEAD", cwd=workspace)
    second = steps.run_trace_sampling(settings, DAY)
    assert second.version.dvc_md5 == first.version.dvc_md5
    assert git("rev-list", "--count", "HEAD", cwd=workspace) == commits

    # The remote alone restores the data: drop the cache and the files, pull them back.
    import shutil

    shutil.rmtree(workspace / ".dvc" / "cache")
    shutil.rmtree(workspace / "golden" / "traces" / f"dt={DAY}")
    dvc("pull", "-q", str(dvc_file.relative_to(workspace)), cwd=workspace)
    assert (workspace / "golden" / "traces" / f"dt={DAY}" / "part-00000.parquet").exists()


def test_runs_the_inbox_and_staging_are_never_versioned(settings, tmp_path, caplog):
    from pipelines.core.versioning import ensure_workspace, remote_url
    from pipelines.core.workspace import Workspace

    workspace = Workspace.from_settings(settings)
    ensure_workspace(workspace, str(tmp_path / "remote"))
    ensure_workspace(
        workspace, str(tmp_path / "remote")
    )  # idempotent: the ignore lines are written once
    ensure_workspace(
        workspace, str(tmp_path / "moved")
    )  # a changed RAGWATCH_DVC_REMOTE wins, and says so
    assert remote_url(workspace) == str(tmp_path / "moved") and "RAGWATCH_DVC_REMOTE" in caplog.text
    assert f"url = {tmp_path / 'moved'}" in git("show", "HEAD:.dvc/config", cwd=workspace.root)
    day = DAY
    for path in (
        workspace.review_candidates(day),
        workspace.run_folder("online", day, "production").meta,
        workspace.traces_staging(day).part(0),
        workspace.traces_selection(day, "attempt").ids,
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("unreviewed production text")
        relative = str(workspace.relative(path))
        assert git("check-ignore", relative, cwd=workspace.root).strip() == relative
    released = workspace.golden("demo").released_items
    released.parent.mkdir(parents=True)
    released.write_text("x")
    ignored = subprocess.run(
        ["git", "check-ignore", str(workspace.relative(released))], cwd=workspace.root
    )
    assert ignored.returncode == 1  # a released set is versioned (its .dvc file in git)
    assert (workspace.root / ".gitignore").read_text().count("/inbox/") == 1


def test_a_dvc_remote_url_with_a_password_is_refused_before_dvc_commits_it(monkeypatch):
    monkeypatch.setenv("RAGWATCH_DVC_REMOTE", "https://ragwatch:s3cr3t-pw@webdav.internal/dvc")
    with pytest.raises(SettingsError, match="RAGWATCH_DVC_REMOTE: .*AWS_ACCESS_KEY_ID") as refused:
        load_settings()
    assert "s3cr3t-pw" not in str(refused.value)
    monkeypatch.setenv("RAGWATCH_DVC_REMOTE", "s3://ragwatch-dvc/ragwatch")
    assert load_settings().resolved_dvc_remote == "s3://ragwatch-dvc/ragwatch"
