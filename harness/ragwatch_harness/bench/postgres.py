"""A throwaway PostgreSQL cluster on a free port, from Debian's server binaries (benchmarks and tests).

PostgreSQL refuses to run as root, so as root the cluster runs as Debian's `postgres` user. fsync
is off: the cluster is deleted when stopped, and a benchmark measures ragwatch, not the disk.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = "run `make test` (it installs Debian's postgresql and prometheus-pushgateway)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_service_user(cmd: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; Debian's package creates the `postgres` user.
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@dataclass
class Postgres:
    directory: Path
    port: int
    bin_dir: Path

    def url(self, user: str, password: str, database: str) -> str:
        return f"postgresql+psycopg://{user}:{password}@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> None:
        subprocess.run(
            as_service_user(
                [
                    str(self.bin_dir / "psql"),
                    "-h",
                    str(self.directory),
                    "-p",
                    str(self.port),
                    "-U",
                    "postgres",
                    "-d",
                    database,
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-q",
                    "-c",
                    sql,
                ]
            ),
            check=True,
            capture_output=True,
            text=True,
        )

    def stop(self) -> None:
        subprocess.run(
            as_service_user(
                [str(self.bin_dir / "pg_ctl"), "-D", str(self.directory / "data"), "-m", "immediate", "stop"]
            ),
            capture_output=True,
        )
        shutil.rmtree(self.directory, ignore_errors=True)


def start_postgres() -> Postgres:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not found:
        raise RuntimeError(f"PostgreSQL server binaries not found; {INSTALL_HINT}")
    bin_dir = Path(found[-1])
    directory = Path(tempfile.mkdtemp(prefix="ragwatch-pg-"))
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    port = free_port()
    run = lambda cmd: subprocess.run(as_service_user(cmd), check=True, capture_output=True, text=True)  # noqa: E731
    run(
        [
            str(bin_dir / "initdb"),
            "-D",
            str(directory / "data"),
            "-U",
            "postgres",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
        ]
    )
    run(
        [
            str(bin_dir / "pg_ctl"),
            "-D",
            str(directory / "data"),
            "-l",
            str(directory / "server.log"),
            "-w",
            "-o",
            f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        ]
    )
    return Postgres(directory=directory, port=port, bin_dir=bin_dir)
