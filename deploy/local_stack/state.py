"""State kept under <home>/stack: ports, secrets, the executor, and the processes started."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from deploy.local_stack.layout import (
    AIRFLOW_ORDER,
    CLI_STACK,
    DEFAULT_WORKERS,
    EXECUTORS,
    LOOPBACK,
    MAKE_ENV,
    MARKER,
    ROOT,
)
from deploy.local_stack.model import DEFAULT_PORTS, Plan, Ports, Service, StackError
from deploy.local_stack.plan import build_plan
from ragwatch_harness.postgres import free_port


def state_dir(home: Path | None = None) -> Path:
    """The stack's state folder: under `home`; else the stack whose cli.env this shell sourced; else
    under RAGWATCH_HOME or .ragwatch."""
    if home is None and os.environ.get(CLI_STACK):
        return Path(os.environ[CLI_STACK]).resolve()
    home = home or Path(os.environ.get("RAGWATCH_HOME") or ROOT / ".ragwatch")
    return (home / "stack").resolve()


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def load_ports(state: Path, requested: dict[str, int] | None = None) -> Ports:
    """Ports fixed at the first `up` (compose's when free, else a free one), kept in ports.json."""
    path = state / "ports.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    if saved and requested and {k: saved.get(k, v) for k, v in requested.items()} != requested:
        raise StackError(
            f"{path} holds other ports than requested ({saved}); `down`, delete it, then `up` again"
        )
    if saved.keys() >= DEFAULT_PORTS.keys():
        return Ports(**{k: saved[k] for k in DEFAULT_PORTS})
    chosen = dict(
        saved
    )  # a stack made before a service was added keeps its ports and gets one for it
    for name, default in ((n, d) for n, d in DEFAULT_PORTS.items() if n not in saved):
        wanted = (requested or {}).get(name) or int(
            os.environ.get(f"RAGWATCH_STACK_{name.upper()}_PORT", default)
        )
        chosen[name] = wanted if port_free(wanted) or (requested or {}).get(name) else free_port()
        if chosen[name] != wanted:
            print(f"port {wanted} is taken: {name} gets {chosen[name]}")
    path.write_text(json.dumps(chosen, indent=1) + "\n")
    return Ports(**chosen)


def load_secrets(state: Path) -> dict[str, str]:
    """The stack's .env: deploy/make-env.sh's output (every change-me a fresh secret), made once."""
    path = state / ".env"
    if not path.exists():
        made = subprocess.run(
            ["bash", str(MAKE_ENV)], capture_output=True, text=True, check=True
        ).stdout
        tmp = path.with_suffix(".tmp")
        tmp.write_text(made)
        tmp.chmod(0o600)
        tmp.replace(path)
    pairs = (
        line.split("=", 1)
        for line in path.read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    return {k.strip(): v.strip() for k, v in pairs}


def load_executor(
    state: Path, executor: str | None = None, workers: int | None = None
) -> tuple[str, int]:
    """The stack's executor and worker count: the ones asked for, else those of its last `up`, else
    the LocalExecutor. Kept in executor.json; another one than the running stack's needs a `down`
    first."""
    path = state / "executor.json"
    saved = (
        json.loads(path.read_text())
        if path.exists()
        else {"executor": "local", "workers": DEFAULT_WORKERS}
    )
    wanted = {"executor": executor or saved["executor"], "workers": workers or saved["workers"]}
    if wanted["executor"] not in EXECUTORS:
        raise StackError(f"unknown executor {wanted['executor']!r}: one of {', '.join(EXECUTORS)}")
    if wanted != saved:
        if any(running_pid(state, name) for name in _service_names(state)):
            raise StackError(
                f"this stack runs {_describe(saved['executor'], saved['workers'])}; `make down` first, "
                f"then `make up` with {_describe(wanted['executor'], wanted['workers'])}"
            )
        path.write_text(json.dumps(wanted) + "\n")
    return wanted["executor"], wanted["workers"]


def _describe(executor: str, workers: int) -> str:
    return f"EXECUTOR=celery WORKERS={workers}" if executor == "celery" else "EXECUTOR=local"


def plan_for(
    home: Path | None = None,
    ports: dict[str, int] | None = None,
    executor: str | None = None,
    workers: int | None = None,
) -> Plan:
    state = state_dir(home)
    state.mkdir(parents=True, exist_ok=True)
    chosen, count = load_executor(state, executor, workers)
    return build_plan(state, load_ports(state, ports), load_secrets(state), chosen, count)


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22: start time in clock ticks since boot


def _pidfile(state: Path, name: str) -> Path:
    return state / "run" / f"{name}.pid"


def running_pid(state: Path, name: str) -> int | None:
    path = _pidfile(state, name)
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if _start_time(saved["pid"]) == saved["start"] and not _zombie(saved["pid"]):
        return saved["pid"]
    return None


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the group `start` created for exactly this process
    except (ProcessLookupError, PermissionError):
        pass


def _ours(saved: dict) -> bool:
    """Whether the session/group a pid file names is still this stack's: its leader runs with the
    recorded start time, or no process has that pid (Linux never reuses a pid that is still some
    live process's session or group id, so the ones found under it are the leader's orphans)."""
    start = _start_time(saved["pid"])
    return start is None or start == saved["start"]


def _saved(path: Path) -> dict | None:
    try:
        saved = json.loads(path.read_text())
        return saved if {"pid", "start"} <= saved.keys() else None
    except (OSError, ValueError):
        return None


def spawn_detached(
    argv: list[str], log, *, cwd: Path | str | None, env: dict[str, str]
) -> subprocess.Popen:
    """`argv` in a session of its own, so that stopping it signals its whole group; its output goes
    to `log`."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def start(plan: Plan, service: Service) -> int:
    saved = _pidfile(plan.state, service.name)
    old = _saved(saved)
    if old and _ours(
        old
    ):  # a crashed leader may have left its group behind (workers holding the port)
        _signal_group(old["pid"], signal.SIGKILL)
    logs = plan.state / "logs"
    with open(logs / f"{service.name}.log", "ab") as log:
        log.write(f"\n=== {datetime.now(UTC).isoformat()} {shlex.join(service.argv)}\n".encode())
        log.flush()
        proc = spawn_detached(service.argv, log, cwd=service.cwd, env=service.env)
    saved.write_text(
        json.dumps({"pid": proc.pid, "start": _start_time(proc.pid), "argv": service.argv})
    )
    return proc.pid


def _session_id(stat: str) -> int:
    return int(stat.rsplit(")", 1)[1].split()[3])  # field 6: the session id


def stack_processes(state: Path) -> list[tuple[int, str]]:
    """Every live process of this stack (pid, command line): the members of the sessions `start`
    created, and whatever carries the stack's marker in its environment (PostgreSQL, setup
    commands). Both are needed: Airflow's processes retitle themselves (setproctitle), which
    overwrites the environment that /proc shows."""
    wanted = f"{MARKER}={state}".encode()
    sessions = {s["pid"] for p in (state / "run").glob("*.pid") if (s := _saved(p)) and _ours(s)}
    mine = {os.getpid(), os.getppid()}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            member = _session_id((entry / "stat").read_text()) in sessions
            if (member or wanted in (entry / "environ").read_bytes().split(b"\0")) and not _zombie(
                int(entry.name)
            ):
                cmdline = (
                    (entry / "cmdline")
                    .read_bytes()
                    .replace(b"\0", b" ")
                    .decode(errors="replace")
                    .strip()
                )
                found.append((int(entry.name), cmdline))
        except OSError:
            continue
    return found


def _service_names(state: Path) -> list[str]:
    """The services `down` stops, in order: the Celery workers a pid file names, Airflow, then the
    rest."""
    workers = sorted(p.stem for p in (state / "run").glob("airflow-worker-*.pid"))
    return [*workers, *reversed(AIRFLOW_ORDER), "redis", "prometheus", "pushgateway"]


def _stop_services(state: Path, names, timeout: float) -> list[str]:
    """SIGTERM each running service's process group, wait up to `timeout`, then SIGKILL whatever of
    a group outlived its leader; returns the services that were running."""
    pids = {name: pid for name in names if (pid := running_pid(state, name))}
    for pid in pids.values():
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(running_pid(state, n) for n in pids):
        time.sleep(0.2)
    for name in pids:
        if (saved := _saved(_pidfile(state, name))) and _ours(saved):
            _signal_group(saved["pid"], signal.SIGKILL)
    return list(pids)
