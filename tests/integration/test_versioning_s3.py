"""DVC on an S3-compatible remote for real: moto's S3 server in process, the dvc CLI with its S3
driver (dvc-s3).

Credentials and the endpoint come from the AWS_* environment, as in docker-compose.yml with MinIO.
"""

import logging
from datetime import date

import pytest

from pipelines.core.files import file_sha256
from pipelines.core.versioning import git, restore_workspace
from pipelines.core.workspace import Workspace
from pipelines.golden import steps as golden_steps
from pipelines.golden.dataset import load_golden_items
from pipelines.traces import steps as trace_steps
from tests.support.s3_server import s3_bucket
from tests.support.workspace_data import write_promoted_partition, write_staged_golden

DAY = date(2026, 11, 20)
BUCKET = "ragwatch-dvc"
SECRET = "moto-secret-never-committed"


@pytest.fixture
def s3(tmp_path, monkeypatch):
    with s3_bucket(
        BUCKET, user="ragwatch-dvc-user", secret=SECRET, tmp_path=tmp_path, monkeypatch=monkeypatch
    ) as client:
        yield client


def _hashes(folder):
    return {
        str(p.relative_to(folder)): file_sha256(p) for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_a_partition_and_a_golden_release_pushed_to_s3_restore_byte_for_byte_in_a_fresh_workspace(
    settings, s3, tmp_path, caplog
):
    caplog.set_level(logging.DEBUG, logger="pipelines")
    settings = settings.model_copy(update={"dvc_remote": f"s3://{BUCKET}/ragwatch"})
    workspace = Workspace.from_settings(settings)
    day = trace_steps.PromotedSample(day=DAY, partition=write_promoted_partition(workspace, DAY))
    sampled = trace_steps.version_trace_sample(
        settings, day
    )  # the trace_sampling DAG's `version` task
    write_staged_golden(workspace, "demo")
    release = golden_steps.release_golden(settings, "demo")  # the golden_build DAG's `release` task
    assert (sampled.remote, release.version) == (f"s3://{BUCKET}/ragwatch", "v1")

    stored = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert len(stored) >= 8 and all(
        key.startswith("ragwatch/files/md5/") for key in stored
    )  # 2 .dir listings + files
    # The remote's URL is in the workspace's git; the endpoint and credentials are nowhere in it,
    # nor in a log.
    history = git("log", "-p", "--all", cwd=workspace.root)
    assert f"url = s3://{BUCKET}/ragwatch" in history
    assert not any(secret in history for secret in (SECRET, "127.0.0.1", "ragwatch-dvc-user"))
    assert not (workspace.root / ".dvc" / "config.local").exists() and SECRET not in caplog.text

    # Another machine: `ragwatch workspace restore <the workspace's git>`, its data from the S3
    # remote alone.
    fresh = Workspace(tmp_path / "elsewhere" / "workspace")
    restored = restore_workspace(fresh, settings.resolved_dvc_remote, source=str(workspace.root))
    assert sorted(restored) == ["golden/datasets/demo.dvc", f"golden/traces/dt={DAY}.dvc"]
    for published in (workspace.traces_partition(DAY).root, workspace.golden("demo").released):
        copy = fresh.root / workspace.relative(published)
        assert _hashes(copy) == _hashes(published) and len(_hashes(copy)) >= 3
    assert git("status", "--porcelain", cwd=fresh.root) == ""
    # A tagged version reads back in the restored workspace too (offline_eval's `golden_version`,
    # through `dvc get`).
    items = load_golden_items(
        settings.model_copy(update={"workspace": fresh.root}), "demo", version="v1"
    )
    assert [item.item_id for item in items] == [f"item-{i}" for i in range(6)]
