"""Monitoring only: the Pushgateway and Prometheus of `make demo`."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from deploy.local_stack.airflow_api import _ok, _tail
from deploy.local_stack.compose import derived_prometheus_config
from deploy.local_stack.layout import INSTALL_HINT
from deploy.local_stack.model import StackError
from deploy.local_stack.state import (
    _pidfile,
    _stop_services,
    plan_for,
    running_pid,
    start,
    state_dir,
)

MONITORING = ("pushgateway", "prometheus")
DEMO_INTERVAL = "5s"
"""The demo's Prometheus scrapes and evaluates every 5 s (30 s in prometheus.yml) so that an alert a
run triggers is evaluated within the demo; the rules themselves are the project's, unchanged."""


def monitoring_up(
    home: Path, interval: str | None = DEMO_INTERVAL, timeout: float = 60
) -> dict[str, str]:
    """Start this stack's Pushgateway and (when its binary exists) Prometheus alone, fresh: the same
    service definitions as `up`, state under `<home>/stack`, ports chosen anew (compose's when
    free). Returns the variables that point ragwatch at them (RAGWATCH_PUSHGATEWAY_URL,
    RAGWATCH_PROMETHEUS_URL)."""
    if shutil.which("prometheus-pushgateway") is None:
        raise StackError(f"prometheus-pushgateway not found; {INSTALL_HINT}")
    monitoring_down(home)
    state = state_dir(home)
    for sub in ("pushgateway-data", "prometheus-data"):  # a fresh start: nothing from the last demo
        shutil.rmtree(state / sub, ignore_errors=True)
    (state / "ports.json").unlink(missing_ok=True)
    plan = plan_for(home)
    for sub in ("logs", "run", "pushgateway-data", "prometheus-data"):
        (plan.state / sub).mkdir(parents=True, exist_ok=True)
    names = [n for n in MONITORING if n == "pushgateway" or shutil.which(n)]
    if "prometheus" in names:
        (plan.state / "prometheus.yml").write_text(derived_prometheus_config(plan.ports, interval))
    for name in names:
        start(plan, plan.services[name])
    deadline = time.monotonic() + timeout
    for name in names:
        while not _ok(plan.services[name].ready_url):
            if running_pid(plan.state, name) is None or time.monotonic() > deadline:
                monitoring_down(home)
                raise StackError(
                    f"{name} did not become healthy\n{_tail(plan.state / 'logs' / f'{name}.log')}"
                )
            time.sleep(0.2)
    found = {"RAGWATCH_PUSHGATEWAY_URL": plan.pushgateway_url}
    if "prometheus" in names:
        found["RAGWATCH_PROMETHEUS_URL"] = plan.prometheus_url
    return found


def monitoring_down(home: Path, timeout: float = 15) -> None:
    """Stop what `monitoring_up` started (by the pid files it wrote, nothing else)."""
    state = state_dir(home)
    for name in _stop_services(state, MONITORING, timeout):
        _pidfile(state, name).unlink(missing_ok=True)
