"""Version published data with the `dvc` CLI inside a data workspace (a git + DVC repository).

DVC refuses to run while another DVC process holds the repository lock, so Airflow runs these
steps in a one-slot pool; a short retry here covers a lock left by a process still exiting.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

log = logging.getLogger(__name__)
GIT_IDENTITY = ["-c", "user.name=ragwatch", "-c", "user.email=ragwatch@localhost"]
WORKSPACE_GITIGNORE = ".staging/\n"
LOCK_RETRIES = 5


class VersioningError(RuntimeError):
    pass


@dataclass(frozen=True)
class DataVersion:
    path: str
    md5: str
    """DVC's content hash of the directory: the data version."""
    git_rev: str
    """Commit in the data workspace that records the .dvc file."""
    remote: str


def _env() -> dict[str, str]:
    return dict(os.environ, DVC_NO_ANALYTICS="1", GIT_TERMINAL_PROMPT="0")


def _run(cmd: list[str], cwd: Path) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        said = "\n".join(part.strip() for part in (proc.stdout, proc.stderr) if part.strip())
        raise VersioningError(f"`{' '.join(cmd[2:] if cmd[0] == sys.executable else cmd)}` failed in {cwd}:\n{said}")
    return proc.stdout


def dvc(*args: str, cwd: Path) -> str:
    for attempt in range(LOCK_RETRIES):
        try:
            return _run([sys.executable, "-m", "dvc", *args], cwd)
        except VersioningError as exc:
            if "Unable to acquire lock" not in str(exc) or attempt == LOCK_RETRIES - 1:
                raise
            log.warning("DVC repository is locked by another process; retrying in %ss", 2**attempt)
            time.sleep(2**attempt)
    raise AssertionError("unreachable")


def git(*args: str, cwd: Path) -> str:
    return _run(["git", *GIT_IDENTITY, *args], cwd)


PROJECT_ROOT = Path(__file__).resolve().parents[1]
PIPELINE_FILES = ("dvc.yaml", "params.yaml")
INPUT_DIRS = ("golden/human", "golden/reviews")


def ensure_workspace(workspace: Path, remote: str) -> None:
    """Create the data workspace on first use: git repo, DVC repo, default remote, the golden pipeline.

    dvc.yaml and params.yaml are copied from the project once; afterwards they belong to the
    workspace, so a data team can tune params.yaml there and `dvc repro`.
    """
    workspace.mkdir(parents=True, exist_ok=True)
    for name in PIPELINE_FILES:
        if not (workspace / name).exists():
            shutil.copyfile(PROJECT_ROOT / name, workspace / name)
    for folder in INPUT_DIRS:
        (workspace / folder).mkdir(parents=True, exist_ok=True)
        (workspace / folder / ".gitkeep").touch()
    if not (workspace / ".git").exists():
        git("init", "-q", "-b", "main", cwd=workspace)
    if not (workspace / ".dvc").exists():
        dvc("init", "-q", cwd=workspace)
        dvc("config", "core.analytics", "false", cwd=workspace)
        (workspace / ".gitignore").write_text(WORKSPACE_GITIGNORE)
        (workspace / ".dvcignore").write_text(WORKSPACE_GITIGNORE)
    configured = dvc("remote", "list", cwd=workspace).split()
    if "storage" not in configured:
        dvc("remote", "add", "-d", "storage", remote, cwd=workspace)
    elif configured[configured.index("storage") + 1] != remote:
        dvc("remote", "modify", "storage", "url", remote, cwd=workspace)
    _commit(workspace, "ragwatch: initialise data workspace",
            [".dvc", ".gitignore", ".dvcignore", *PIPELINE_FILES, *(f"{d}/.gitkeep" for d in INPUT_DIRS)])


def version_directory(workspace: Path, relative: Path, message: str, extra_paths: list[Path] = ()) -> DataVersion:
    """`dvc add` + `dvc push` one directory, then commit its .dvc file (and small text inputs) in git."""
    dvc("add", "-q", str(relative), cwd=workspace)
    dvc_file = relative.with_name(relative.name + ".dvc")
    dvc("push", "-q", str(dvc_file), cwd=workspace)
    extras = [str(Path(p).relative_to(workspace) if Path(p).is_absolute() else p) for p in extra_paths]
    _commit(workspace, message, [str(dvc_file), str(relative.parent / ".gitignore"), *extras])
    out = yaml.safe_load((workspace / dvc_file).read_text())["outs"][0]
    rev = git("rev-parse", "--short=12", "HEAD", cwd=workspace).strip()
    remote = dvc("remote", "list", cwd=workspace).split()[1]
    log.info("versioned %s: md5 %s, workspace commit %s, pushed to %s", relative, out["md5"], rev, remote)
    return DataVersion(path=str(relative), md5=out["md5"], git_rev=rev, remote=remote)


def _commit(workspace: Path, message: str, paths: list[str]) -> None:
    existing = [p for p in paths if (workspace / p).exists()]
    git("add", "--", *existing, cwd=workspace)
    if git("status", "--porcelain", "--", *existing, cwd=workspace).strip():
        git("commit", "-q", "-m", message, "--", *existing, cwd=workspace)


def latest_tag(workspace: Path, prefix: str) -> str | None:
    """Newest tag starting with `prefix` (tags are `<prefix><n>`; compared by n, not as text)."""
    tags = [t for t in git("tag", "--list", f"{prefix}*", cwd=workspace).split() if t[len(prefix):].isdigit()]
    return max(tags, key=lambda t: int(t[len(prefix):]), default=None)


def tag(workspace: Path, name: str, message: str) -> None:
    git("tag", "-a", name, "-m", message, cwd=workspace)
