"""Real services for the test session: a throwaway PostgreSQL cluster and a Pushgateway on free ports.

Debian's binaries (installed by `make test` via scripts/system-deps.sh) are started here, not
mocked; a missing binary is an error that says how to install it, never a skip.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

INSTALL_HINT = "run `make test` (it installs Debian's postgresql and prometheus-pushgateway)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_service_user(cmd: list[str]) -> list[str]:
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
            _as_service_user([str(self.bin_dir / "psql"), "-h", str(self.directory), "-p", str(self.port),
                              "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql]),
            check=True, capture_output=True, text=True,
        )  # fmt: skip

    def stop(self) -> None:
        subprocess.run(_as_service_user([str(self.bin_dir / "pg_ctl"), "-D", str(self.directory / "data"), "-m",
                                         "immediate", "stop"]), capture_output=True)  # fmt: skip
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
    run = lambda cmd: subprocess.run(_as_service_user(cmd), check=True, capture_output=True, text=True)  # noqa: E731
    run([str(bin_dir / "initdb"), "-D", str(directory / "data"), "-U", "postgres", "--auth-local=trust",
         "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8"])  # fmt: skip
    run([str(bin_dir / "pg_ctl"), "-D", str(directory / "data"), "-l", str(directory / "server.log"), "-w", "-o",
         f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off", "start"])  # fmt: skip
    return Postgres(directory=directory, port=port, bin_dir=bin_dir)



PUSHGATEWAY_BIN = Path("/usr/bin/prometheus-pushgateway")


@dataclass
class Pushgateway:
    url: str
    process: subprocess.Popen
    directory: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def start_pushgateway(timeout_s: float = 20.0) -> Pushgateway:
    """A Pushgateway without persistence (no --persistence.file): every session starts empty."""
    binary = shutil.which("prometheus-pushgateway") or (str(PUSHGATEWAY_BIN) if PUSHGATEWAY_BIN.exists() else None)
    if binary is None:
        raise RuntimeError(f"prometheus-pushgateway not found; {INSTALL_HINT}")
    directory = Path(tempfile.mkdtemp(prefix="ragwatch-pushgateway-"))
    port = free_port()
    log = open(directory / "pushgateway.log", "wb")
    process = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}"], cwd=directory, stdout=log,
                               stderr=subprocess.STDOUT)  # fmt: skip
    log.close()
    gateway = Pushgateway(url=f"http://127.0.0.1:{port}", process=process, directory=directory)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = (directory / "pushgateway.log").read_text(errors="replace")
            gateway.stop()
            raise RuntimeError(f"prometheus-pushgateway exited with {process.returncode}: {output[-2000:]}")
        try:
            with urllib.request.urlopen(f"{gateway.url}/-/ready", timeout=1) as response:
                if response.status == 200:
                    return gateway
        except OSError:
            time.sleep(0.1)
    gateway.stop()
    raise RuntimeError(f"prometheus-pushgateway on port {port} not ready after {timeout_s:.0f} s")
