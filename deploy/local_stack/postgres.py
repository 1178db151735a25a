"""PostgreSQL: a cluster of our own, initialised by deploy/postgres/init.sql, kept between starts.

The commands themselves are the harness's launcher's (`ragwatch_harness.postgres.Cluster`), as the
tests' and the benchmarks' throwaway clusters run them; here they are logged to the stack's
postgres.log."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from deploy.local_stack.layout import INIT_SQL, MARKER, ROOT
from deploy.local_stack.model import Plan, StackError
from deploy.local_stack.state import _zombie
from ragwatch_harness.postgres import Cluster, as_service_user, server_binaries


def _cluster(state: Path, port: int) -> Cluster:
    try:
        bin_dir = server_binaries()
    except FileNotFoundError as exc:
        raise StackError(str(exc)) from exc
    return Cluster(
        data=state / "postgres-data", sockets=state / "postgres-run", port=port, bin_dir=bin_dir
    )


def _run(
    cmd: list[str],
    log: Path,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 600,
):
    with open(log, "ab") as out:
        out.write(f"\n=== {datetime.now(UTC).isoformat()} {shlex.join(cmd)}\n".encode())
        out.flush()
        result = subprocess.run(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            input=stdin.encode() if stdin is not None else None,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise StackError(f"`{shlex.join(cmd)}` failed ({result.returncode}); log {log}:\n{tail}")


def postgres_pid(state: Path) -> int | None:
    """The postmaster of this stack's cluster, if it runs (a zombie or a reused pid does not
    count)."""
    data = state / "postgres-data"
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError, IndexError):
        return None
    return pid if str(data) in cmdline and not _zombie(pid) else None


def ensure_postgres(plan: Plan) -> None:
    cluster = _cluster(plan.state, plan.ports.postgres)
    data, log = cluster.data, plan.state / "logs" / "postgres.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "RAGWATCH_"))} | {
        MARKER: str(plan.state)
    }
    done = data / "ragwatch-initialised"
    if not done.exists():
        # docker-entrypoint-initdb.d runs init.sql once, on an empty volume: a cluster whose init
        # did not finish (a crash midway) holds nothing yet, so it is made again from scratch.
        if postgres_pid(plan.state):
            _run(cluster.stop("immediate"), log, env)
        shutil.rmtree(data, ignore_errors=True)
        for path in (data, cluster.sockets):
            path.mkdir(parents=True, exist_ok=True)
            if os.geteuid() == 0:
                shutil.chown(path, "postgres", "postgres")
        data.chmod(0o700)
        check = subprocess.run(as_service_user(["test", "-w", str(data)]), capture_output=True)
        if check.returncode != 0:
            raise StackError(
                f"user postgres cannot write {data}: every folder above it must be searchable (o+x)"
            )
        _run(cluster.initdb(), log, env)
    if postgres_pid(plan.state) is None:
        # No postmaster of this cluster runs: lock files left by a crash are stale. PostgreSQL would
        # refuse to start while their pid still exists, which a not yet reaped zombie's does.
        for stale in [data / "postmaster.pid", *cluster.sockets.glob(".s.PGSQL.*")]:
            stale.unlink(missing_ok=True)
        server_log = plan.state / "logs" / "postgres-server.log"
        server_log.touch()
        if os.geteuid() == 0:  # the server writes it as postgres
            shutil.chown(server_log, "postgres", "postgres")
        _run(cluster.start(server_log, wait_s=120), log, env)
    if not done.exists():
        passwords = {
            k: plan.secrets[k]
            for k in (
                "AIRFLOW_DB_PASSWORD",
                "RESULTS_DB_PASSWORD",
                "TRACES_READER_PASSWORD",
                "TRACES_WRITER_PASSWORD",
            )
        }
        _run(cluster.psql("-q", "-f", "-"), log, env | passwords, stdin=INIT_SQL.read_text())
        done.write_text(datetime.now(UTC).isoformat() + "\n")


def stop_postgres(state: Path) -> None:
    if postgres_pid(state):
        # The port is only needed to connect: stopping goes through the data folder.
        subprocess.run(_cluster(state, port=0).stop("fast"), capture_output=True)
