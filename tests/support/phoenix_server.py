"""A real Phoenix server on 127.0.0.1, its SQLite database in a folder of the test's, stopped when
the block ends.

Phoenix runs from its own venv (scripts/phoenix-server.sh), as the service it is beside an app. Its
start is bounded: a server that is not healthy in time fails with the end of its log.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from ragwatch_harness.postgres import free_port

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 120.0


def phoenix_python() -> str:
    """The Phoenix venv's interpreter, set up on first use."""
    setup = subprocess.run(
        [str(ROOT / "scripts" / "phoenix-server.sh")],
        env={
            **os.environ,
            "PYTHON": sys.executable,
        },  # the venv is made from the tests' interpreter
        capture_output=True,
        text=True,
        timeout=900,
    )
    if setup.returncode != 0:
        raise RuntimeError(f"scripts/phoenix-server.sh failed:\n{setup.stderr[-3000:]}")
    return setup.stdout.strip().splitlines()[-1]


@contextmanager
def running_phoenix(working_dir: Path, python: str) -> Iterator[str]:
    """Yields the server's base URL (what `Client(base_url=...)` takes; OTLP/HTTP at
    `<url>/v1/traces`)."""
    working_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {
        **{
            k: v for k, v in os.environ.items() if k != "PYTHONPATH"
        },  # the server's venv, not the checkout
        "PHOENIX_WORKING_DIR": str(working_dir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    url = f"http://127.0.0.1:{port}"
    log_path = working_dir / "phoenix.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [python, "-m", "phoenix.server.main", "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_healthy(url, server, log_path)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _wait_healthy(url: str, server: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            break
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    state = (
        f"exited with {server.returncode}"
        if server.poll() is not None
        else f"not healthy in {START_TIMEOUT_S:.0f} s"
    )
    raise RuntimeError(
        f"Phoenix server {state}; its log ends:\n{log_path.read_text(errors='replace')[-4000:]}"
    )
