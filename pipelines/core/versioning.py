"""Version published data with the `dvc` CLI inside a data workspace (a git + DVC repository).

Every step that changes the workspace's git or DVC state (first-use initialisation, a version's `dvc
add`, `dvc push` and commit, a release's tag) holds the workspace lock (`workspace_lock`): an
exclusive `flock` on a file in the workspace root. It serialises the processes of one machine, and
of several when the workspace is on a shared filesystem whose locks reach every client (NFSv4,
CephFS; not an object-store FUSE mount: docs/how-to/several-machines.md). Without it two first runs
both find no remote and both add one, or two commits collide on git's index. Airflow also runs the
versioning tasks in a one-slot pool, so a queued task waits in the scheduler instead of holding a
worker slot while it waits for the lock. DVC refuses to run while another DVC process holds its own
repository lock: a short retry here covers a DVC command ragwatch did not start (a person's `dvc
status` in the workspace).

The remote's URL is committed in the workspace's `.dvc/config`; its credentials and endpoint never
are: DVC's S3 driver reads the standard AWS variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_ENDPOINT_URL_S3` for MinIO), which the dvc processes inherit from the task's environment.
"""

from __future__ import annotations

import configparser
import errno
import fcntl
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Iterator

import yaml

from pipelines.core.files import atomic_write_text
from pipelines.core.redact import redact_url
from pipelines.core.workspace import MANIFEST_RECORD, UNVERSIONED, Workspace, manifest_sha256

log = logging.getLogger(__name__)
GIT_IDENTITY = ["-c", "user.name=ragwatch", "-c", "user.email=ragwatch@localhost"]
LOCK_RETRIES = 5
ADD_ATTEMPTS = 3
REMOTE = "storage"
LOCK_WAIT_S = 1800.0
"""How long a step waits for another to finish versioning (a large `dvc push` takes minutes) before
it fails."""


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
        raise VersioningError(
            f"`{' '.join(cmd[2:] if cmd[0] == sys.executable else cmd)}` failed in {cwd}:\n{said}"
        )
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


@dataclass
class _ProcessHold:
    """This process's hold on one workspace lock: threads queue on `mutex`, nested holds only
    count."""

    mutex: threading.RLock = field(default_factory=threading.RLock)
    depth: int = 0
    file: IO[str] | None = None


_holds: dict[Path, _ProcessHold] = {}
_holds_guard = threading.Lock()


def _forget_holds_in_child() -> None:
    # A forked child is a process of its own: it takes the lock itself rather than think it holds
    # its parent's. Closing its copy of the descriptor leaves the parent's lock held: flock ends
    # with the last descriptor.
    global _holds_guard
    for hold in _holds.values():
        if hold.file is not None:
            hold.file.close()
    _holds.clear()
    _holds_guard = threading.Lock()


os.register_at_fork(after_in_child=_forget_holds_in_child)


@contextmanager
def workspace_lock(workspace: Workspace, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold the workspace's exclusive lock: one holder across processes (and machines sharing the
    folder).

    Re-entrant within a process, so a step that holds it may call others that take it: a second
    `flock` on a new descriptor of the same file would wait for the first one, in the same process.
    """
    root = workspace.root.resolve()
    with _holds_guard:
        hold = _holds.setdefault(root, _ProcessHold())
    with hold.mutex:
        if hold.depth == 0:
            hold.file = _acquire(workspace.lock_file, wait_s)
        hold.depth += 1
        try:
            yield
        finally:
            hold.depth -= 1
            if hold.depth == 0:
                # closing the descriptor releases the lock; so does the process's death
                hold.file.close()
                hold.file = None


def _acquire(path: Path, wait_s: float) -> IO[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+")
    deadline, waiting = time.monotonic() + wait_s, False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                handle.close()
                raise VersioningError(
                    f"cannot lock {path} ({exc.strerror}): the data workspace must be on a filesystem "
                    "with working file locks (docs/how-to/several-machines.md: the workspace lock)"
                ) from None
            holder = path.read_text().strip() or "another process"
            if time.monotonic() >= deadline:
                handle.close()
                raise VersioningError(
                    f"the data workspace {path.parent} stayed locked for {wait_s:.0f} s by {holder}, which is still "
                    "versioning (a large `dvc push`?) or hangs: wait for it or stop it, then rerun this step"
                ) from None
            if not waiting:
                log.info("waiting for the data workspace lock, held by %s", holder)
                waiting = True
            time.sleep(0.2)
    handle.seek(0)
    handle.truncate()
    handle.write(
        f"pid {os.getpid()} on {socket.gethostname()} since {datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}\n"
    )
    handle.flush()
    return handle


PROJECT_ROOT = Path(__file__).resolve().parents[2]
PIPELINE_FILES = ("dvc.yaml", "params.yaml")


def ensure_workspace(workspace: Workspace, remote: str) -> None:
    """Create the data workspace on first use: git repo, DVC repo, default remote, the golden
    pipeline.

    Safe to call from any number of tasks at once (under the workspace lock), and cheap once the
    workspace exists: no dvc process starts unless something is missing. A changed
    `RAGWATCH_DVC_REMOTE` wins: the remote's URL follows the setting (what was pushed before stays
    on the old remote). dvc.yaml and params.yaml are copied from the project once; afterwards they
    belong to the workspace, so a data team can tune params.yaml there and `dvc repro`.
    """
    root = workspace.root
    with workspace_lock(workspace):
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
        configured = remote_url(workspace)
        if configured is None:
            dvc("remote", "add", "-d", REMOTE, remote, cwd=root)
        elif configured != remote:
            log.warning(
                "DVC remote %r of %s moves from %s to %s (RAGWATCH_DVC_REMOTE)",
                REMOTE,
                root,
                redact_url(configured),
                redact_url(remote),
            )
            dvc("remote", "modify", REMOTE, "url", remote, cwd=root)
        _commit(
            root,
            "ragwatch: initialise data workspace",
            [".dvc", ".gitignore", ".dvcignore", *PIPELINE_FILES, *keep_files],
        )


def remote_url(workspace: Workspace) -> str | None:
    """The URL of the workspace's remote, read from DVC's config files (the repo's, then the
    untracked local one)."""
    config = configparser.ConfigParser(interpolation=None, strict=False)
    config.read([workspace.root / ".dvc" / "config", workspace.root / ".dvc" / "config.local"])
    return config.get(
        f"'remote \"{REMOTE}\"'", "url", fallback=None
    )  # DVC writes the section as ['remote "storage"']


def _ensure_lines(path: Path, lines: tuple[str, ...]) -> None:
    present = set(path.read_text().splitlines()) if path.exists() else set()
    missing = [line for line in lines if line not in present]
    if missing:
        with path.open("a") as fh:
            fh.write("".join(f"{line}\n" for line in missing))


def version_directory(
    workspace: Workspace, folder: Path, message: str, extra_paths: list[Path] = ()
) -> DataVersion:
    """`dvc add` + `dvc push` one folder of the workspace, record its manifest's hash in the .dvc
    file, then commit the .dvc file (and small text inputs) in git.

    The manifest's hash is recorded last, after the push: until then readers refuse the folder
    (`StaleVersion`), so a step killed anywhere here leaves a folder that no reader takes for its
    old version, and that the next call completes. Another run of the same day may promote its own
    folder while `dvc add` reads this one: the manifest is hashed before and after, and a folder
    that changed underneath is added again.
    """
    root, relative = workspace.root, workspace.relative(folder)
    dvc_file = workspace.dvc_file(relative)
    with workspace_lock(workspace):
        for _ in range(ADD_ATTEMPTS):
            before = manifest_sha256(root / relative)
            # Not -q: a failure (an S3 credential refused) would then raise with nothing said.
            dvc("add", str(relative), cwd=root)
            if manifest_sha256(root / relative) == before:
                break
            log.warning("%s was replaced while `dvc add` read it: adding it again", relative)
        else:
            raise VersioningError(
                f"{relative} kept changing while it was versioned: rerun this step"
            )
        dvc("push", "-r", REMOTE, str(dvc_file), cwd=root)
        if before is not None:
            _record_manifest(root / dvc_file, before)
        extras = [str(workspace.relative(p)) for p in extra_paths]
        _commit(root, message, [str(dvc_file), str(relative.parent / ".gitignore"), *extras])
        rev = git("rev-parse", "--short=12", "HEAD", cwd=root).strip()
    md5 = workspace.dvc_md5(root / relative)
    remote = redact_url(remote_url(workspace) or "")
    log.info("versioned %s: md5 %s, workspace commit %s, pushed to %s", relative, md5, rev, remote)
    return DataVersion(path=str(relative), md5=md5, git_rev=rev, remote=remote)


def uncommitted_dvc_files(workspace: Workspace, folder: Path) -> set[Path]:
    """The `.dvc` files under `folder` that differ from the workspace's last commit, or were never
    committed."""
    status = git(
        "status",
        "--porcelain",
        "-z",
        "--untracked-files=all",
        "--",
        str(workspace.relative(folder)),
        cwd=workspace.root,
    )
    paths = (entry[3:] for entry in status.split("\0") if entry)
    return {workspace.root / path for path in paths if path.endswith(".dvc")}


def _record_manifest(dvc_file: Path, sha256: str) -> None:
    # DVC keeps a .dvc file's `meta` through later `dvc add`s: an old record stays until this step
    # replaces it.
    body = yaml.safe_load(dvc_file.read_text()) or {}
    body["meta"] = {**(body.get("meta") or {}), MANIFEST_RECORD: sha256}
    atomic_write_text(dvc_file, yaml.safe_dump(body, sort_keys=False, allow_unicode=True))


def restore_workspace(workspace: Workspace, remote: str, source: str | None = None) -> list[str]:
    """Fill the workspace with every versioned folder (trace partitions, golden releases) from the
    DVC remote.

    `source`: the workspace's git history (a path or git URL) to clone first into a folder that does
    not exist yet, e.g. on a new machine. The remote is the setting's, like every step's. A bare
    `dvc pull` would also ask for the golden pipeline's stage outputs (dvc.yaml), which ragwatch
    never pushes, and fail.
    """
    root = workspace.root
    if source is not None:
        if root.exists() and any(root.iterdir()):
            raise VersioningError(
                f"{root} is not empty: clone the workspace into a new folder (RAGWATCH_WORKSPACE), "
                "or leave out the source to fill this workspace from the remote"
            )
        root.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "-q", source, str(root), cwd=root.parent)
    elif not (root / ".git").exists():
        raise VersioningError(
            f"{root} is not a data workspace yet: give the git history to clone from (a path or URL)"
        )
    ensure_workspace(workspace, remote)
    with workspace_lock(workspace):
        tracked = git("ls-files", "-z", "--", "*.dvc", cwd=root).split("\0")[:-1]
        if tracked:
            dvc("pull", "-r", REMOTE, *tracked, cwd=root)
    log.info("restored %d versioned folders of %s from %s", len(tracked), root, redact_url(remote))
    return tracked


def _commit(root: Path, message: str, paths: list[str]) -> None:
    existing = [p for p in paths if (root / p).exists()]
    git("add", "--", *existing, cwd=root)
    if git("status", "--porcelain", "--", *existing, cwd=root).strip():
        git("commit", "-q", "-m", message, "--", *existing, cwd=root)


def latest_tag(workspace: Workspace, prefix: str) -> str | None:
    """Newest tag starting with `prefix` (tags are `<prefix><n>`; compared by n, not as text)."""
    tags = [
        t
        for t in git("tag", "--list", f"{prefix}*", cwd=workspace.root).split()
        if t[len(prefix) :].isdigit()
    ]
    return max(tags, key=lambda t: int(t[len(prefix) :]), default=None)


def has_tag(workspace: Workspace, name: str) -> bool:
    return git("tag", "--list", name, cwd=workspace.root).strip() == name


def tag(workspace: Workspace, name: str, message: str) -> None:
    git("tag", "-a", name, "-m", message, cwd=workspace.root)
