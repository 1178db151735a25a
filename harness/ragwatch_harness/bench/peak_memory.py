"""A benchmarked process's own peak resident memory.

`getrusage(RUSAGE_SELF).ru_maxrss` is the wrong number for a spawned task: Linux copies the parent's
high-water mark into the child at fork and keeps it across exec, so a task spawned by a 1.5 GB
pytest worker reported 1.5 GB for a step that used 200 MB. The kernel's per-address-space mark
(`VmHWM`) starts again at exec.
"""

from __future__ import annotations

import resource
from pathlib import Path

STATUS = Path("/proc/self/status")


def own_peak_rss_mb() -> float:
    """This process's peak RSS in MB since it started (exec'd): VmHWM, or ru_maxrss where /proc is
    absent."""
    if STATUS.exists():
        for line in STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
