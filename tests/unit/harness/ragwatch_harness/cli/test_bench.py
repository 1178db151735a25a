"""`ragwatch bench ...` as a person runs it: the harness's group, through the product's command."""

import subprocess
import sys

from tests.conftest import ROOT


def test_bench_anonymize_reports_throughput_ratio_and_recall_side_by_side():
    argv = [
        sys.executable,
        "-m",
        "pipelines.cli",
        "bench",
        "anonymize",
        "--traces",
        "150",
        "--clean-traces",
        "40",
    ]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=True)
    assert (
        "presidio" in result.stdout.lower() and "MB/s" in result.stdout and "EMAIL" in result.stdout
    )
    assert "clean" in result.stdout.lower()
