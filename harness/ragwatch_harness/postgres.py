"""PostgreSQL clusters from Debian's server binaries: the one launcher of the tests, the benchmarks
and `make up`.

`Cluster` builds the commands (`initdb`, `pg_ctl start` / `stop`, `psql`) for one data folder; who
runs them decides what happens to their output. `start_postgres()` is a throwaway cluster on a free
port (tests, benchmarks): fsync off, deleted when stopped, since it measures ragwatch and not the
disk. The `make up` stack keeps its cluster between starts (deploy/local_stack/postgres.py).
PostgreSQL refuses to run as root, so as root every command runs as Debian's `postgres` user.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from glob import glob
from pathlib import Path

INSTALL_HINT = (
    "scripts/system-deps.sh installs Debian's postgresql (`make test` and `make up` run it)"
)
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def as_service_user(cmd: list[str]) -> list[str]:
    # runuser keeps the environment: init.sql's \getenv reads the passwords from it.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def server_binaries() -> Path:
    """The newest installed major version's bin folder (/usr/lib/postgresql/<major>/bin)."""
    found = sorted(glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    if not found:
        raise FileNotFoundError(f"PostgreSQL server binaries not found; {INSTALL_HINT}")
    return Path(found[-1]).parent


@dataclass(frozen=True)
class Cluster:
    """One cluster: its data folder, the folder of its Unix socket, its port and the server
    binaries. Each method returns a command, run as the service user when this process is root."""

    data: Path
    sockets: Path
    port: int
    bin_dir: Path

    def initdb(self) -> list[str]:
        return as_service_user(
            [
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
            ]
        )

    def start(self, log: Path, *settings: str, wait_s: int = 60) -> list[str]:
        """`pg_ctl start`, waiting until the server accepts connections; `settings`: extra
        `name=value`."""
        options = [f"-p {self.port}", f"-k {self.sockets}", f"-c listen_addresses={LOOPBACK}"]
        options += [f"-c {setting}" for setting in settings]
        pg_ctl = [
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(log),
            "-w",
            "-t",
            str(wait_s),
        ]
        return as_service_user([*pg_ctl, "-o", " ".join(options), "start"])

    def stop(self, mode: str = "fast") -> list[str]:
        return as_service_user(
            [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"]
        )

    def psql(self, *args: str, database: str = "postgres") -> list[str]:
        """psql as the superuser over the Unix socket, stopping at the first error; `args`: -c SQL,
        -f FILE..."""
        connection = [
            "-h",
            str(self.sockets),
            "-p",
            str(self.port),
            "-U",
            "postgres",
            "-d",
            database,
        ]
        return as_service_user(
            [str(self.bin_dir / "psql"), *connection, "--no-psqlrc", "-v", "ON_ERROR_STOP=1", *args]
        )

    def url(self, user: str, password: str, database: str) -> str:
        return f"postgresql+psycopg://{user}:{password}@{LOOPBACK}:{self.port}/{database}"


@dataclass
class Postgres:
    """A throwaway cluster in a temporary folder of its own (data/, server.log and the socket)."""

    cluster: Cluster
    directory: Path

    @property
    def port(self) -> int:
        return self.cluster.port

    def url(self, user: str, password: str, database: str) -> str:
        return self.cluster.url(user, password, database)

    def psql(self, sql: str, database: str = "postgres") -> None:
        _run(self.cluster.psql("-q", "-c", sql, database=database))

    def start(self) -> None:
        """Start the server, again after a kill too: the kill's stale postmaster.pid is removed
        first."""
        (self.cluster.data / "postmaster.pid").unlink(missing_ok=True)
        _run(self.cluster.start(self.directory / "server.log", "fsync=off"))

    def stop(self) -> None:
        subprocess.run(self.cluster.stop("immediate"), capture_output=True)
        shutil.rmtree(self.directory, ignore_errors=True)


def start_postgres() -> Postgres:
    bin_dir = server_binaries()
    directory = Path(tempfile.mkdtemp(prefix="ragwatch-pg-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    postgres = Postgres(Cluster(directory / "data", directory, free_port(), bin_dir), directory)
    _run(postgres.cluster.initdb())
    postgres.start()
    return postgres


def _run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)
