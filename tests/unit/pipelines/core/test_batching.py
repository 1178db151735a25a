"""Worker processes sized by the CPUs the process may use: its affinity set capped by its cgroup's
quota."""

import os

import pytest

from pipelines.core.batching import available_cpus

AFFINITY = len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("cpu_max", "expected"),
    [
        ("max 100000\n", AFFINITY),  # no quota: the affinity set
        ("200000 100000\n", min(AFFINITY, 2)),
        ("150000 100000\n", min(AFFINITY, 2)),  # 1.5 CPUs: the second worker is throttled, not idle
        ("10000 100000\n", 1),  # a tenth of a CPU still runs one worker
    ],
)
def test_a_cgroup_v2_quota_caps_the_workers(tmp_path, cpu_max, expected):
    (tmp_path / "cpu.max").write_text(cpu_max)
    assert available_cpus(tmp_path) == expected


def test_a_quota_above_the_affinity_set_leaves_the_affinity_set(tmp_path):
    (tmp_path / "cpu.max").write_text(f"{(AFFINITY + 3) * 100000} 100000\n")
    assert available_cpus(tmp_path) == AFFINITY


def test_without_a_cgroup_file_the_affinity_set_counts(tmp_path):
    assert available_cpus(tmp_path) == AFFINITY
    (tmp_path / "cpu.max").write_text("garbage\n")  # unreadable: no quota rather than a crash
    assert available_cpus(tmp_path) == AFFINITY


@pytest.mark.parametrize(
    ("quota", "expected"), [("-1", AFFINITY), ("100000", 1), ("250000", min(AFFINITY, 3))]
)
def test_a_cgroup_v1_quota_caps_the_workers(tmp_path, quota, expected):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text(quota + "\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert available_cpus(tmp_path) == expected
