"""Real services for the test session: a throwaway PostgreSQL cluster and a Pushgateway on free
ports.

Debian's binaries (installed by `make test` via scripts/system-deps.sh) are started here, not
mocked; a missing binary is an error that says how to install it, never a skip.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

from ragwatch_harness.postgres import Postgres, free_port, start_postgres

__all__ = [
    "Postgres",
    "Pushgateway",
    "free_port",
    "fresh_database",
    "start_postgres",
    "start_pushgateway",
]


PUSHGATEWAY_BIN = Path("/usr/bin/prometheus-pushgateway")
INSTALL_HINT = "run `make test` (it installs Debian's postgresql and prometheus-pushgateway)"


@dataclass
class Pushgateway:
    url: str
    port: int
    process: subprocess.Popen
    directory: Path

    def wipe(self) -> None:
        """Delete every group, so a test reads back only what it pushed (the admin API is on for
        tests)."""
        request = urllib.request.Request(f"{self.url}/api/v1/admin/wipe", method="PUT")
        with urllib.request.urlopen(request, timeout=5) as response:
            if response.status != 202:
                raise RuntimeError(f"Pushgateway wipe answered {response.status}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def start_pushgateway(
    timeout_s: float = 20.0, *, persistence: Path | None = None, port: int | None = None
) -> Pushgateway:
    """A Pushgateway, by default without persistence: every session starts empty; the admin API lets
    each test start from an empty gateway too (`Pushgateway.wipe`). `persistence`: a file kept as
    docker-compose.yml keeps it (written once a minute); `port`: where a killed gateway ran, to
    restart it at the same URL."""
    binary = shutil.which("prometheus-pushgateway") or (
        str(PUSHGATEWAY_BIN) if PUSHGATEWAY_BIN.exists() else None
    )
    if binary is None:
        raise RuntimeError(f"prometheus-pushgateway not found; {INSTALL_HINT}")
    directory = Path(tempfile.mkdtemp(prefix="ragwatch-pushgateway-"))
    port = port or free_port()
    log = open(directory / "pushgateway.log", "wb")
    persisted = (
        [f"--persistence.file={persistence}", "--persistence.interval=1m"] if persistence else []
    )
    process = subprocess.Popen(
        [binary, f"--web.listen-address=127.0.0.1:{port}", "--web.enable-admin-api", *persisted],
        cwd=directory,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    gateway = Pushgateway(
        url=f"http://127.0.0.1:{port}", port=port, process=process, directory=directory
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = (directory / "pushgateway.log").read_text(errors="replace")
            gateway.stop()
            raise RuntimeError(
                f"prometheus-pushgateway exited with {process.returncode}: {output[-2000:]}"
            )
        try:
            with urllib.request.urlopen(f"{gateway.url}/-/ready", timeout=1) as response:
                if response.status == 200:
                    return gateway
        except OSError:
            time.sleep(0.1)
    gateway.stop()
    raise RuntimeError(f"prometheus-pushgateway on port {port} not ready after {timeout_s:.0f} s")


def fresh_database(pg: Postgres, prefix: str) -> str:
    """The URL of a new, empty database owned by a new password role (each test starts with no
    tables)."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    pg.psql(f"CREATE ROLE {name} LOGIN PASSWORD '{name}-pw';")
    pg.psql(
        f"CREATE DATABASE {name} OWNER {name};"
    )  # not allowed in the same transaction as another statement
    return pg.url(name, f"{name}-pw", name)
