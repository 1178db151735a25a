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

from pipelines.workspace import UNVERSIONED, Workspace

log = logging.getLogger(__name__)
GIT_IDENTITY = ["-c", "user.name=ragwatch", "-c", "user.email=ragwatch@localhost"]
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


def ensure_workspace(workspace: Workspace, remote: str) -> None:
    """Create the data workspace on first use: git repo, DVC repo, default remote, the golden pipeline.

    dvc.yaml and params.yaml are copied from the project once; afterwards they belong to the
    workspace, so a data team can tune params.yaml there and `dvc repro`.
    """
    root = workspace.root
    root.mkdir(parents=True, exist_ok=True)
    for name in PIPELINE_FILES:
        if not (root / name).exists():
            shutil.copyfile(PROJECT_ROOT / name, root / name)
    keep_files = []
    for folder in workspace.input_dirs:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".gitkeep").touch()
        keep_files.append(str(workspace.relative(folder / ".gitkeep")))
    if not (root / ".git").exists():
        git("init", "-q", "-b", "main", cwd=root)
    if not (root / ".dvc").exists():
        dvc("init", "-q", cwd=root)
        dvc("config", "core.analytics", "false", cwd=root)
    for ignore_file in (root / ".gitignore", root / ".dvcignore"):
        _ensure_lines(ignore_file, UNVERSIONED)
    configured = dvc("remote", "list", cwd=root).split()
    if "storage" not in configured:
        dvc("remote", "add", "-d", "storage", remote, cwd=root)
    elif configured[configured.index("storage") + 1] != remote:
        dvc("remote", "modify", "storage", "url", remote, cwd=root)
    _commit(root, "ragwatch: initialise data workspace", [".dvc", ".gitignore", ".dvcignore", *PIPELINE_FILES, *keep_files])


def _ensure_lines(path: Path, lines: tuple[str, ...]) -> None:
    present = set(path.read_text().splitlines()) if path.exists() else set()
    missing = [line for line in lines if line not in present]
    if missing:
        with path.open("a") as fh:
            fh.write("".join(f"{line}\n" for line in missing))


def version_directory(workspace: Workspace, folder: Path, message: str, extra_paths: list[Path] = ()) -> DataVersion:
    """`dvc add` + `dvc push` one folder of the workspace, then commit its .dvc file (and small text inputs) in git."""
    root, relative = workspace.root, workspace.relative(folder)
    dvc("add", "-q", str(relative), cwd=root)
    dvc_file = workspace.dvc_file(relative)
    dvc("push", "-q", str(dvc_file), cwd=root)
    extras = [str(workspace.relative(p)) for p in extra_paths]
    _commit(root, message, [str(dvc_file), str(relative.parent / ".gitignore"), *extras])
    md5 = workspace.dvc_md5(root / relative)
    rev = git("rev-parse", "--short=12", "HEAD", cwd=root).strip()
    remote = dvc("remote", "list", cwd=root).split()[1]
    log.info("versioned %s: md5 %s, workspace commit %s, pushed to %s", relative, md5, rev, remote)
    return DataVersion(path=str(relative), md5=md5, git_rev=rev, remote=remote)


def _commit(root: Path, message: str, paths: list[str]) -> None:
    existing = [p for p in paths if (root / p).exists()]
    git("add", "--", *existing, cwd=root)
    if git("status", "--porcelain", "--", *existing, cwd=root).strip():
        git("commit", "-q", "-m", message, "--", *existing, cwd=root)


def latest_tag(workspace: Workspace, prefix: str) -> str | None:
    """Newest tag starting with `prefix` (tags are `<prefix><n>`; compared by n, not as text)."""
    tags = [t for t in git("tag", "--list", f"{prefix}*", cwd=workspace.root).split() if t[len(prefix):].isdigit()]
    return max(tags, key=lambda t: int(t[len(prefix):]), default=None)


def tag(workspace: Workspace, name: str, message: str) -> None:
    git("tag", "-a", name, "-m", message, cwd=workspace.root)
