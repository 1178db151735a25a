"""`make up`'s stack, for real, and held to docker-compose.yml.

One stack for the whole session (the `stack` fixture: deploy/local_stack's `up`, the code
`make up` runs; `make down`'s code stops it and must leave nothing running). In order:

1. what `make up` runs is what the compose file declares (commands, env names, ports inside), with
   every difference listed in `local_stack.ONE_MACHINE` (no stack needed:
   test_stack_compose_parity.py);
2. the stack serves everything on 127.0.0.1 only, logs the admin in, shows the four DAGs
   unpaused, has the pools, and Prometheus scrapes the Pushgateway with the rules loaded;
3. a person backfills two past days of trace_sampling from the UI's backfill dialog in headless
   Chromium (while the schedules run), waits for the runs, and reads the latest scores on the
   ragwatch page;
4. the schedules run: the scheduled trace_sampling, online_eval and offline_eval runs succeed;
5. every PromQL expression of the Grafana dashboard and every alert rule returns series from
   this Prometheus after those runs and a second offline eval (the first has no baseline, hence
   no regression gate to show) pushed; an alert condition that is legitimately empty in a
   healthy run is checked through its inner selectors instead;
6. an operator backfills online_eval through `POST /api/v2/backfills`;
7. the two Celery workers publish what one process running the same steps publishes;
8. a backfill of eight weeks of offline_eval, its runs side by side on the two workers, gates each
   week against the week before it;
9. faults mid-run, each against an undisturbed control (a backfilled week: the same items, golden
   version and corpus): the scheduler killed, a worker killed, the PostgreSQL server (Airflow's
   metadata and the results) killed;
10. `ragwatch corpus refresh --notify` posts the asset event and the asset-triggered golden_build
   releases a new version with the stale items replaced;
11. `up` again is a no-op, and `up` after every process of the stack was killed recovers it.

Each test that runs offline_eval runs its own weeks (`OFFLINE_WEEKS`), counted from the scheduled
run's. Screenshots go to test-artifacts/browser/ (git-ignored); the stack's logs to
test-artifacts/stack-logs/ when a test failed.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, quote

import httpx
import pytest
import yaml

from deploy import local_stack as ls
from tests.support.schedule import first_interval, following_interval, previous_days
from tests.support.stack import ARTIFACTS, ROOT, SEED_DAYS, TERMINAL, StackSession, plugin_routes

DASHBOARD = ROOT / "monitoring" / "grafana" / "dashboards" / "ragwatch.json"
RULES = ROOT / "monitoring" / "rules" / "ragwatch.rules.yml"
BACKFILL_DAYS = 2
EVAL_BUDGET_S = 1200
GATED_RUN_ITEMS = 40
"""The scheduled evals on a loaded two-core machine: the offline one judges the whole test split."""
OFFLINE_WEEKS = {
    "backfill": range(-12, -4),
    "scheduler killed": -4,
    "worker killed": -3,
    "postgres killed": -2,
}
"""The weeks each test runs offline_eval for, counted from the scheduled run's (0; the gated second
run is 1). Oldest first in the order the tests run, so that no test's run lands before a gate that
already read the weeks before it."""
FAULT_RUN_ITEMS = 24
"""The backfilled weeks and the runs under a fault: the smallest subset of the stack's golden test
split whose gate decides. The retrieval and judge metrics are scored on single- and multi-hop items
only, and a metric is gated from `gate_min_pairs` (10) ok pairs on: 24 items draw 12 of those (10
items drew 5, and nothing was gated)."""
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
]
BROWSER_HINT = (
    "run `make test` (scripts/system-deps.sh installs Debian's chromium and chromium-driver)"
)
SHOTS = ARTIFACTS / "browser"


# --- 2. The stack on one machine ------------------------------------------------------------------


def listening_addresses(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state that one of `pids` holds."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = set()
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address, port = fields[1].split(":")
                raw = bytes.fromhex(address)
                # /proc prints each 32-bit word in host (little-endian) order
                raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                found.add((socket.inet_ntop(family, raw), int(port, 16)))
    return found


@pytest.mark.stack
def test_up_serves_the_stack_on_loopback_with_the_dags_unpaused(stack: StackSession):
    plan = stack.plan
    running = ls.status(stack.home)
    assert all(running.values()), running
    for name, service in plan.services.items():
        cmdline = Path(f"/proc/{running[name]}/cmdline").read_bytes().decode().split("\0")
        if (
            name == "airflow-apiserver"
        ):  # it retitles itself: "airflow api_server -- host:... port:..."
            assert f"host:127.0.0.1 port:{plan.ports.airflow}" in " ".join(cmdline)
        elif name == "redis":  # so does redis-server: "redis-server 127.0.0.1:<port>"
            assert f"127.0.0.1:{plan.ports.redis}" in " ".join(cmdline), cmdline
        elif name in plan.workers:  # and Celery: "[celeryd: airflow-worker-1@host:MainProcess] ..."
            assert f"{name}@" in " ".join(cmdline), cmdline
            assert os.readlink(f"/proc/{running[name]}/cwd") == str(
                service.cwd
            )  # its own working directory
        else:
            assert shlex.join(service.argv[1:]) in shlex.join(cmdline), (name, cmdline)

    pids = {pid for pid, _ in ls.stack_processes(plan.state)}
    listening = listening_addresses(pids)
    assert {port for _, port in listening} >= {
        plan.ports.airflow,
        plan.ports.prometheus,
        plan.ports.pushgateway,
        plan.ports.postgres,
        plan.ports.scheduler_health,
        *([plan.ports.redis] if plan.workers else []),
    }
    assert {address for address, _ in listening} == {"127.0.0.1"}, listening

    # The login `make up` prints; a wrong password is refused.
    user, password = plan.admin
    assert user == "admin" and password == ls.load_secrets(plan.state)["AIRFLOW_ADMIN_PASSWORD"]
    wrong = httpx.post(
        f"{stack.base_url}/auth/token", json={"username": user, "password": "wrong"}, timeout=30
    )
    assert wrong.status_code == 401, wrong.text
    assert httpx.get(f"{stack.base_url}/api/v2/dags", timeout=30).status_code == 401

    # The processes that fork task processes imported ragwatch's task modules once
    # (plugins/airflow_local_settings.py).
    for name in plan.workers or ["airflow-scheduler"]:
        assert (
            "ragwatch preloaded its task modules"
            in (plan.state / "logs" / f"{name}.log").read_text()
        ), name

    dags = stack.api("GET", "/api/v2/dags", params={"limit": 100}).json()["dags"]
    assert {d["dag_id"]: d["is_paused"] for d in dags} == {
        dag_id: False for dag_id in ls.expected_dag_ids()
    }
    assert len(dags) == 4
    pools = {p["name"]: p["slots"] for p in stack.api("GET", "/api/v2/pools").json()["pools"]}
    assert pools["ragwatch_dvc"] == 1 and pools["ragwatch_llm"] == 4, pools
    plugins = stack.api("GET", "/api/v2/plugins").json()["plugins"]
    assert [v["href"] for p in plugins if p["name"] == "ragwatch" for v in p["external_views"]] == [
        "/ragwatch/"
    ]

    # The tasks talk to this stack's Pushgateway and PostgreSQL, as compose's do to theirs.
    assert plan.airflow_env["RAGWATCH_PUSHGATEWAY_URL"] == plan.pushgateway_url
    assert plan.airflow_env["RAGWATCH_RESULTS_URL"].endswith(
        f"@127.0.0.1:{plan.ports.postgres}/ragwatch_results"
    )
    cli_env = (plan.state / "cli.env").read_text()
    assert (
        f"RAGWATCH_AIRFLOW_API_URL={plan.airflow_url}" in cli_env
        and oct((plan.state / "cli.env").stat().st_mode)[-3:] == "600"
    )
    # A shell that sourced cli.env is not one of the stack's processes (`make down` leaves it
    # alone), and `make up` or `make down` from it act on this stack, not on one nested under the
    # stack's RAGWATCH_HOME.
    sourced = f"set -a; . {shlex.quote(str(plan.state / 'cli.env'))}; set +a"
    shell = subprocess.Popen(["bash", "-c", f"{sourced}; exec sleep 120"])
    try:
        wait(
            lambda: b"RAGWATCH_CLI_STACK" in Path(f"/proc/{shell.pid}/environ").read_bytes(),
            10,
            "the shell",
            0.1,
        )
        assert shell.pid not in {pid for pid, _ in ls.stack_processes(plan.state)}
    finally:
        shell.kill()
    where = subprocess.run(
        [
            "bash",
            "-c",
            f"{sourced}; {shlex.quote(sys.executable)} -c 'from deploy.local_stack import state_dir; "
            "print(state_dir())'",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert where.stdout.strip() == str(plan.state)

    def scraped():
        targets = httpx.get(f"{plan.prometheus_url}/api/v1/targets", timeout=30).json()["data"][
            "activeTargets"
        ]
        return {t["labels"]["job"]: t["health"] for t in targets} == {
            "pushgateway": "up",
            "prometheus": "up",
        }

    wait(scraped, 120, "Prometheus to scrape the Pushgateway and itself")
    alerts = httpx.get(ls.alerts_page(plan), timeout=30)  # the page `make up` prints exists
    assert alerts.status_code == 200 and "Alerts" in alerts.text, ls.alerts_page(plan)
    groups = httpx.get(f"{plan.prometheus_url}/api/v1/rules", timeout=30).json()["data"]["groups"]
    loaded = {rule["name"] for group in groups for rule in group["rules"]}
    declared_rules = yaml.safe_load(RULES.read_text())["groups"]
    assert loaded == {
        rule.get("alert") or rule["record"] for group in declared_rules for rule in group["rules"]
    }


def wait(probe, timeout: float, what: str, interval: float = 3.0):
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# --- 3. A backfill from the UI, in a real browser -------------------------------------------------


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            pytest.fail(f"{path} not found; {BROWSER_HINT}")
    profile = tempfile.mkdtemp(prefix="ragwatch-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    # The Debian driver, named: Selenium Manager would otherwise try to download one.
    driver = webdriver.Chrome(
        service=Service(CHROMEDRIVER, log_output=str(SHOTS / "chromedriver.log")), options=options
    )
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


class Page:
    """What a person does, step by step, with a screenshot after each step."""

    def __init__(self, driver, base_url: str):
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver, self.base_url, self.shot = driver, base_url, 0
        self.wait = WebDriverWait(driver, 120, poll_frequency=0.5)

    def find(self, by, selector):
        from selenium.webdriver.support import expected_conditions as ec

        return self.wait.until(
            ec.element_to_be_clickable((by, selector)), f"{selector} never became clickable"
        )

    def text_appears(self, text: str):
        from selenium.webdriver.common.by import By

        self.wait.until(
            lambda d: text in d.find_element(By.TAG_NAME, "body").text, f"{text!r} never appeared"
        )

    def type(self, element, text: str) -> None:
        from selenium.webdriver.common.keys import Keys

        element.click()
        element.send_keys(Keys.CONTROL, "a")
        element.send_keys(Keys.BACKSPACE)
        element.send_keys(text)

    def screenshot(self, name: str) -> Path:
        self.shot += 1
        path = SHOTS / f"{self.shot:02d}-{name}.png"
        self.driver.save_screenshot(str(path))
        return path


@pytest.mark.stack
@pytest.mark.browser
def test_backfill_two_days_from_the_ui_and_read_the_scores(stack: StackSession, browser):
    from selenium.webdriver.common.by import By

    # The days before the scheduled run's (the latest complete day when the unpause started it).
    days = previous_days(scheduled_day(stack), BACKFILL_DAYS)
    assert days[0] >= scheduled_day(stack) - timedelta(days=SEED_DAYS - 1), (
        "the demo traffic covers every backfilled day"
    )
    page = Page(browser, stack.base_url)
    began = time.monotonic()

    # Log in: Airflow sends a person without a session to its login form, then back.
    browser.get(f"{stack.base_url}/dags/trace_sampling")
    user, password = stack.plan.admin
    page.type(page.find(By.CSS_SELECTOR, "input[name=username]"), user)
    page.type(page.find(By.CSS_SELECTOR, "input[name=password]"), password)
    page.screenshot("login")
    page.find(By.CSS_SELECTOR, "button[type=submit]").click()
    page.wait.until(
        lambda d: d.current_url.endswith("/dags/trace_sampling"),
        "the login never landed on the DAG",
    )

    # The DAG's Trigger button opens the dialog; its Backfill card is the backfill form.
    page.find(By.CSS_SELECTOR, "[data-testid=trigger-dag-button]").click()
    page.find(By.XPATH, "//label[contains(., 'Run this Dag for a range of dates')]").click()
    fields = page.wait.until(
        lambda d: (
            (f := d.find_elements(By.CSS_SELECTOR, "[data-testid=datetime-input]"))
            and len(f) == 2
            and f
        ),
        "the From/To date fields never showed",
    )
    for field, day in zip(fields, (days[0], days[-1])):
        field.click()  # a popover with a date and a time field (UTC)
        popover = "[data-scope=popover][data-part=content][data-state=open] "
        page.type(
            page.find(By.CSS_SELECTOR, popover + "input[placeholder='YYYY/MM/DD']"),
            day.strftime("%Y/%m/%d"),
        )
        page.type(page.find(By.CSS_SELECTOR, popover + "input[placeholder='HH:mm']"), "00:00")
        page.find(
            By.XPATH, "//*[normalize-space(text())='Date Range']"
        ).click()  # closes the popover
    page.type(page.find(By.CSS_SELECTOR, "input[name=max_active_runs]"), str(BACKFILL_DAYS))
    page.text_appears(f"{BACKFILL_DAYS} runs will be triggered.")  # the dialog's dry run agrees
    page.screenshot("backfill-dialog")
    page.find(By.XPATH, "//button[normalize-space(.)='Run Backfill']").click()
    page.text_appears("Backfill generated")
    page.screenshot("backfill-started")

    # While the backfill runs, the ragwatch page lists its runs in progress with their task states.
    browser.get(f"{stack.base_url}/ragwatch/")
    page.text_appears("in progress")
    page.text_appears(days[0].isoformat())  # the backfill's first day, in the trace_sampling row
    in_progress = stack.api("GET", "/ragwatch/api/latest").json()["suites"]["online"]["in_progress"]
    assert any(
        r["dag_id"] == "trace_sampling"
        and r["run_id"].startswith("backfill__")
        and r["task_states"]
        for r in in_progress
    ), in_progress
    page.screenshot("ragwatch-page-in-progress")
    # Nothing to watch while the runs finish, and an open page keeps Chromium and the api-server
    # busy (a core's quarter on two cores): the person looks away.
    browser.get("about:blank")

    runs = stack.wait_for_runs("trace_sampling", "backfill", BACKFILL_DAYS, EVAL_BUDGET_S)
    stack.timings[f"UI backfill of {BACKFILL_DAYS} days"] = time.monotonic() - began
    assert sorted((datetime.fromisoformat(r["logical_date"]).date(), r["state"]) for r in runs) == [
        (day, "success") for day in days
    ]
    backfills = stack.api("GET", "/api/v2/backfills", params={"dag_id": "trace_sampling"}).json()[
        "backfills"
    ]
    assert [(b["max_active_runs"], b["reprocess_behavior"]) for b in backfills] == [
        (BACKFILL_DAYS, "none")
    ]
    workspace = Path(plan_env(stack)["RAGWATCH_WORKSPACE"])
    for day in days:
        manifest = json.loads(
            (workspace / "golden" / "traces" / f"dt={day}" / "_manifest.json").read_text()
        )
        assert manifest["day"] == day.isoformat() and manifest["sampled"] > 0
    browser.get(f"{stack.base_url}/dags/trace_sampling/runs")
    page.text_appears(f"backfill__{days[-1] + timedelta(days=1)}")
    page.screenshot("backfill-runs")

    # The ragwatch page, from its nav entry: the latest runs' scores, as its JSON API gives them.
    browser.get(
        "about:blank"
    )  # the runs page refreshes itself while runs are active: away while they finish
    scheduled_evals(stack)  # the scheduled evals have scores to show
    gated_offline_run(stack)  # and no run lands while the page is read
    browser.get(f"{stack.base_url}/dags/trace_sampling/runs")
    page.find(By.CSS_SELECTOR, "a[aria-label=ragwatch]").click()
    frame = page.find(By.CSS_SELECTOR, "iframe[src$='/ragwatch/']")
    browser.switch_to.frame(frame)
    page.text_appears("ragwatch: latest eval runs")
    text = browser.find_element(By.TAG_NAME, "body").text
    browser.switch_to.default_content()
    page.screenshot("ragwatch-page")
    latest = stack.api("GET", "/ragwatch/api/latest").json()["suites"]
    for suite in ("offline", "online"):
        assert latest[suite]["runs"] and f"{suite} suite" in text, (suite, latest[suite])
        for run in latest[suite]["runs"]:
            assert run["run_id"] in text and run["logical_date"] in text and run["metrics"], run
        for metric in (m for run in latest[suite]["runs"] for m in run["metrics"]):
            shown = "–" if metric["mean"] is None else f"{metric['mean']:.3f}"
            assert re.search(rf"{re.escape(metric['metric'])}\b.*{re.escape(shown)}", text), (
                suite,
                metric,
            )

    # The alerts page `make up` prints: Prometheus lists ragwatch's alert rules there.
    browser.get(ls.alerts_page(stack.plan))
    page.text_appears("RagEvalGateFailed")
    page.text_appears("RagJudgeNotTrusted")
    page.screenshot("prometheus-alerts")


# --- 4. The schedules run -------------------------------------------------------------------------


def first_scheduled(stack: StackSession, dag_id: str) -> datetime:
    """The logical date of `dag_id`'s first scheduled run, as soon as the unpause created it."""
    deadline = time.monotonic() + 300
    while not (runs := stack.runs(dag_id, "scheduled")):
        assert time.monotonic() < deadline, (
            f"no scheduled {dag_id} run 5 min after the unpause\n{stack.diagnostics()}"
        )
        time.sleep(2)
    return min(datetime.fromisoformat(r["logical_date"]) for r in runs)


def scheduled_day(stack: StackSession):
    """The day trace_sampling's scheduled run samples (and online_eval's evaluates): the demo
    traffic's last day."""
    return first_scheduled(stack, "trace_sampling").date()


def offline_week(stack: StackSession, weeks: int) -> datetime:
    """The logical date (a week's start) `weeks` weeks from the scheduled offline_eval run's, on its
    schedule."""
    return first_scheduled(stack, "offline_eval") + timedelta(weeks=weeks)


def scheduled_evals(stack: StackSession) -> dict[str, dict]:
    """The first scheduled run of each eval DAG and of trace_sampling, once they succeeded."""
    if stack.scheduled is not None:
        return stack.scheduled
    began = time.monotonic()
    found = {}
    for dag_id in ("trace_sampling", "offline_eval", "online_eval"):
        [run] = stack.wait_for_runs(
            dag_id, "scheduled", 1, EVAL_BUDGET_S - (time.monotonic() - began)
        )
        assert run["state"] == "success", run
        found[dag_id] = run
        if dag_id == "offline_eval":
            found["offline_eval (gated)"] = trigger_second_offline_eval(stack, run)
    stack.timings["scheduled runs (waited)"] = time.monotonic() - began
    stack.scheduled = found
    return found


def trigger_second_offline_eval(stack: StackSession, scheduled: dict) -> dict:
    """A second offline eval, next week's on the schedule: the first has no baseline, hence no
    regression gate, and the gate's gauge (a dashboard panel, an alert) would have nothing to show.
    Triggered as soon as the first is done, so that it runs beside the rest; `gated_offline_run`
    waits for it."""
    next_week = following_interval(
        "offline_eval", datetime.fromisoformat(scheduled["data_interval_end"])
    )
    body = {
        "logical_date": next_week.start.isoformat(),
        "data_interval_start": next_week.start.isoformat(),
        "data_interval_end": next_week.end.isoformat(),
        "conf": {"limit": GATED_RUN_ITEMS},
    }
    response = stack.api("POST", "/api/v2/dags/offline_eval/dagRuns", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def gated_offline_run(stack: StackSession) -> dict:
    run_id = scheduled_evals(stack)["offline_eval (gated)"]["dag_run_id"]
    began = time.monotonic()
    [run] = [
        r
        for r in stack.wait_for_runs("offline_eval", "manual", 1, EVAL_BUDGET_S)
        if r["dag_run_id"] == run_id
    ]
    assert run["state"] == "success", run
    stack.timings.setdefault("second offline eval (waited)", time.monotonic() - began)
    return run


@pytest.mark.stack
def test_the_schedules_run(stack: StackSession):
    runs = scheduled_evals(stack)
    # Each ran the latest interval of its schedule complete when the unpause created it.
    for dag_id in ("trace_sampling", "online_eval", "offline_eval"):
        expected = first_interval(dag_id, datetime.fromisoformat(runs[dag_id]["queued_at"]))
        assert [
            datetime.fromisoformat(runs[dag_id][f"data_interval_{e}"]) for e in ("start", "end")
        ] == list(expected)
    yesterday = scheduled_day(stack)
    assert datetime.fromisoformat(runs["online_eval"]["logical_date"]).date() == yesterday
    # The first golden set, built by a golden_build run when the stack first started.
    assert [r["state"] for r in stack.runs("golden_build")][:1] == ["success"]
    partition = (
        Path(plan_env(stack)["RAGWATCH_WORKSPACE"]) / "golden" / "traces" / f"dt={yesterday}"
    )
    assert (partition / "_manifest.json").exists()


def plan_env(stack: StackSession) -> dict[str, str]:
    return stack.plan.airflow_env


# --- 5. The Grafana dashboard and the alert rules against real data -------------------------------


def dashboard_expressions() -> list[tuple[str, str]]:
    """(panel title, expr) with the template variables at the values Grafana opens the dashboard
    with."""
    board = json.loads(DASHBOARD.read_text())
    values = {}
    for variable in board["templating"]["list"]:
        current = variable["current"]["value"]
        current = current if isinstance(current, list) else [current]
        values[variable["name"]] = (
            variable["allValue"] if "$__all" in current else "|".join(current)
        )
    found = []

    def walk(panels):
        for panel in panels:
            for target in panel.get("targets", []):
                # `$1` in label_replace is a regex group, not a variable
                expr = re.sub(
                    r"\$\{?([A-Za-z_]\w*)\}?", lambda m: values[m.group(1)], target["expr"]
                )
                assert not re.search(r"\$[A-Za-z_{]", expr), expr
                found.append((panel["title"], expr))
            walk(panel.get("panels", []))

    walk(board["panels"])
    return found


_COMPARISONS = ("==", "!=", ">=", "<=", ">", "<")


def inner_selectors(expr: str) -> list[str]:
    """The operands of an alert condition that select data: `absent(X)` -> X; `A > B` -> A and B
    (whichever names a metric; `26 * 3600` does not), split at the outermost comparison."""
    expr = expr.strip()
    absent = re.fullmatch(r"absent\((.*)\)", expr, flags=re.DOTALL)
    if absent:
        return [absent.group(1)]
    depth, quoted, i = 0, False, 0
    cut = None
    while i < len(expr):
        char = expr[i]
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "([{":
            depth += 1
        elif not quoted and char in ")]}":
            depth -= 1
        elif not quoted and depth == 0:
            op = next((o for o in _COMPARISONS if expr.startswith(o, i)), None)
            if op and expr[i - 1] not in "=!~" and not expr.startswith("=~", i):
                cut = (i, len(op))
                i += len(op)
                continue
        i += 1
    if cut is None:
        return [expr]
    sides = [expr[: cut[0]], expr[cut[0] + cut[1] :]]
    return [
        side.strip()
        for side in sides
        if re.search(r"[A-Za-z_:][\w:]*\s*(\{|$|\s|\))", side.replace("time()", ""))
        and not re.fullmatch(r"[\d\s.*+/-]+", side.strip())
    ]


def test_inner_selectors_of_alert_conditions():
    assert inner_selectors('absent(push_time_seconds{job="ragwatch",suite="online"})') == [
        'push_time_seconds{job="ragwatch",suite="online"}'
    ]
    assert inner_selectors('time() - push_time_seconds{job="ragwatch"} > 26 * 3600') == [
        'time() - push_time_seconds{job="ragwatch"}'
    ]
    assert inner_selectors('a{x=~"y"} / (b{stratum="all"} > 0) > 0.1') == [
        'a{x=~"y"} / (b{stratum="all"} > 0)'
    ]
    assert inner_selectors("push_failure_time_seconds > push_time_seconds") == [
        "push_failure_time_seconds",
        "push_time_seconds",
    ]
    assert inner_selectors('up{job="pushgateway"} == 0') == ['up{job="pushgateway"}']


LABELLED_ONLY = "rag_judge_"
"""The judge audit's series exist once people have labelled its queue, the retest's once a run
retested 10 items per metric: no stack run does either
(tests/unit/pipelines/evaluation/outputs/test_judge_audit.py,
tests/unit/pipelines/evaluation/statistics/test_judge_noise.py and the rules' promtool cases cover
them)."""
NEEDS_PARAPHRASES = "rag_golden_coverage"
"""The coverage series exist once the golden set has 10 user questions (items from traces or people)
whose own passage the embedding model tells from other documents' (coverage/threshold.py); the
stack's small golden set may not, and then its coverage is `failed` with that reason (checked below;
tests/unit/pipelines/evaluation/coverage/test_daily.py and the rules' promtool cases cover the
series)."""


@pytest.mark.stack
def test_every_dashboard_and_alert_expression_returns_series(stack: StackSession):
    gated = gated_offline_run(stack)  # both suites pushed to this stack's Pushgateway, the gate too
    # The gated run's push comes after it started; the first offline run's, before it was triggered.
    started = datetime.fromisoformat(gated["start_date"]).timestamp()

    def both_suites_scraped():
        if not stack.prometheus(f'push_time_seconds{{job="ragwatch",suite="offline"}} > {started}'):
            return False
        return {
            s["metric"].get("suite") for s in stack.prometheus('push_time_seconds{job="ragwatch"}')
        } >= {
            "online",
            "offline",
        }

    wait(both_suites_scraped, 180, "Prometheus to scrape both suites' pushes")
    expressions = [
        (t, e)
        for t, e in dashboard_expressions()
        if LABELLED_ONLY not in e and NEEDS_PARAPHRASES not in e
    ]
    empty = [(title, expr) for title, expr in expressions if not stack.prometheus(expr)]
    assert not empty, f"dashboard panels whose query returns no series: {empty}"

    through_inner = []
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            if (
                LABELLED_ONLY in rule["expr"]
                or NEEDS_PARAPHRASES in rule["expr"]
                or stack.prometheus(rule["expr"])
            ):
                continue  # the condition holds (the alert is pending or firing): it selects data
            inner = inner_selectors(rule["expr"])
            assert inner != [rule["expr"]], f"{rule['alert']}: {rule['expr']} returns no series"
            missing = [expr for expr in inner if not stack.prometheus(expr)]
            assert not missing, f"{rule['alert']}: {missing} return no series"
            through_inner.append(rule["alert"])
    print(
        f"\nalert conditions empty in this healthy run, checked through their selectors: {through_inner}"
    )
    # The online run measured its coverage, or says why there is no figure rather than pushing a
    # made-up one.
    workspace = Path(stack.plan.airflow_env["RAGWATCH_WORKSPACE"])
    measured = [
        json.loads(p.read_text()) for p in (workspace / "runs" / "online").glob("*/coverage.json")
    ]
    assert measured and all(
        c["status"] == "ok" or c["reason"].startswith("uncalibrated: ") for c in measured
    ), measured


# --- 6. A backfill through the REST API, as an operator scripts it --------------------------------


@pytest.mark.stack
def test_backfill_online_eval_through_the_rest_api(stack: StackSession):
    """`POST /api/v2/backfills` for the days the UI backfilled: one online run per day, no score
    twice, pushed to the Pushgateway, and the plugin behind Airflow's auth shows the newest."""
    days = previous_days(scheduled_day(stack), BACKFILL_DAYS)
    workspace = Path(plan_env(stack)["RAGWATCH_WORKSPACE"])
    assert all(
        (workspace / "golden" / "traces" / f"dt={d}" / "_manifest.json").exists() for d in days
    ), "the UI backfill promotes these days' partitions first"
    began, began_wall = time.monotonic(), time.time()
    # One day at a time: this stack has Qdrant in local mode, which one process may open at a time.
    body = {
        "dag_id": "online_eval",
        "from_date": f"{days[0]}T00:00:00Z",
        "to_date": f"{days[-1]}T00:00:00Z",
        "reprocess_behavior": "none",
        "max_active_runs": 1,
        "dag_run_conf": {},
    }
    response = stack.api("POST", "/api/v2/backfills", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["dag_id"] == "online_eval" and response.json()["completed_at"] is None
    runs = stack.wait_for_runs("online_eval", "backfill", BACKFILL_DAYS, EVAL_BUDGET_S)
    stack.timings["REST backfill of online_eval"] = time.monotonic() - began
    assert sorted((datetime.fromisoformat(r["logical_date"]).date(), r["state"]) for r in runs) == [
        (day, "success") for day in days
    ]

    import sqlalchemy as sa

    engine = sa.create_engine(plan_env(stack)["RAGWATCH_RESULTS_URL"])
    with engine.connect() as conn:
        total, distinct = conn.execute(
            sa.text(
                "SELECT count(*), count(DISTINCT (s.run_id, s.item_id, s.metric)) "
                "FROM eval_scores s JOIN eval_runs r ON r.run_id = s.run_id WHERE r.suite = 'online'"
            )
        ).one()
        online_days = {
            row[0]
            for row in conn.execute(
                sa.text("SELECT logical_date FROM eval_runs WHERE suite = 'online'")
            )
        }
    engine.dispose()
    assert total > 0 and total == distinct, (
        f"{total} online score rows, {distinct} distinct (run, item, metric)"
    )
    assert set(days) <= online_days
    # A backfilled past day never overwrites the gauges of the newest online run (yesterday's):
    # their push tasks skip, so the online group was last pushed before this backfill began.
    pushed = httpx.get(f"{stack.plan.pushgateway_url}/api/v1/metrics", timeout=30).json()["data"]
    online_groups = [g for g in pushed if g["labels"].get("suite") == "online"]
    assert online_groups and all(
        float(g["push_time_seconds"]["metrics"][0]["value"]) < began_wall for g in online_groups
    )

    # The plugin is loaded by the api-server and guarded by Airflow's auth like /api/v2 is.
    plugins = stack.api("GET", "/api/v2/plugins").json()["plugins"]
    assert [v["href"] for p in plugins if p["name"] == "ragwatch" for v in p["external_views"]] == [
        "/ragwatch/"
    ]
    [online] = stack.api("GET", "/ragwatch/api/latest").json()["suites"]["online"]["runs"]
    assert (
        online["logical_date"] == scheduled_day(stack).isoformat()
    )  # the newest, not a backfilled day
    report = stack.api("GET", online["report_url"])
    assert report.status_code == 200 and "sandbox" in report.headers["content-security-policy"]
    assert_every_plugin_route_needs_airflow_auth(stack, online["run_id"])


def assert_every_plugin_route_needs_airflow_auth(stack: StackSession, run_id: str) -> None:
    """Airflow 3 serves a plugin's FastAPI app unguarded: the app's own hook must ask Airflow's auth
    manager. Every route, read from the app: no credentials is 401, as on /api/v2 (the page sends a
    browser to Airflow's login page instead), a forged token or session cookie 403 (Airflow's
    "Invalid JWT token"); the UI's session cookie and an API token both get the route."""
    token = stack.token()
    session = {"Cookie": f"_token={token}"}  # the cookie the Airflow UI keeps its session in

    def request(method: str, url: str, **headers: str) -> httpx.Response:
        # One request each, no client: a cookie an answer sets must not reach the next request.
        return httpx.request(
            method, f"{stack.base_url}{url}", headers=headers, timeout=60, follow_redirects=False
        )

    assert request("GET", "/api/v2/dags").status_code == 401
    assert request("GET", "/api/v2/dags", Authorization="Bearer not-a-jwt").status_code == 403
    for method, path in plugin_routes({"run_id": run_id}):
        url = f"/ragwatch{path}"
        assert request(method, url).status_code == 401, url
        for forged in ({"Authorization": "Bearer not-a-jwt"}, {"Cookie": "_token=not-a-jwt"}):
            assert request(method, url, **forged).status_code == 403, (url, forged)
        browser = request(method, url, Accept="text/html")
        if path == "/":
            assert browser.status_code == 307, browser.text
            login, _, query = browser.headers["location"].partition("?")
            assert login == "/auth/login" and parse_qs(query) == {
                "next": [f"{stack.base_url}/ragwatch/"]
            }
        else:
            assert browser.status_code == 401, url
        for credentials in (session, {"Authorization": f"Bearer {token}"}):
            assert request(method, url, **credentials).status_code == 200, (url, list(credentials))


# --- 7. Two Celery workers, one truth -------------------------------------------------------------


def mapped_tasks_by_host(stack: StackSession) -> dict[str, list[str]]:
    """Host name -> the successful mapped task instances it ran ("dag.task[i]"), over every run so
    far."""
    found: dict[str, list[str]] = {}
    for dag_id in ls.expected_dag_ids():
        offset = 0
        while True:  # pages of at most 100 (the api-server's maximum page size)
            page = stack.api(
                "GET",
                f"/api/v2/dags/{dag_id}/dagRuns/~/taskInstances",
                params={"limit": 100, "offset": offset},
            ).json()["task_instances"]
            for ti in page:
                if ti["map_index"] >= 0 and ti["state"] == "success":
                    found.setdefault(ti["hostname"], []).append(
                        f"{dag_id}.{ti['task_id']}[{ti['map_index']}]"
                    )
            if len(page) < 100:
                break
            offset += 100
    return found


def one_process_settings(stack: StackSession, folder: Path):
    """Settings for the same runs on one machine in one process: the stack's inputs (its trace store
    through the read-only role, a copy of its corpus index, its golden params and pseudonym key),
    everything else apart."""
    from pipelines.core.settings import Settings

    env = stack.plan.cli_env()
    workspace = folder / "workspace"
    workspace.mkdir(parents=True)
    shutil.copyfile(Path(env["RAGWATCH_WORKSPACE"]) / "params.yaml", workspace / "params.yaml")
    shutil.copytree(
        env["RAGWATCH_QDRANT_PATH"], folder / "qdrant"
    )  # the corpus refresh test edits the stack's later
    return Settings(
        home=folder / "home",
        workspace=workspace,
        dvc_remote=str(folder / "dvc-remote"),
        qdrant_path=folder / "qdrant",
        trace_store_url=env["RAGWATCH_TRACE_STORE_URL"],
        results_url=f"sqlite:///{folder / 'results.db'}",
        anonymizer_key=env["RAGWATCH_ANONYMIZER_KEY"],
    )


def published_results(results_url: str, run_ids: list[str]) -> dict[str, dict]:
    """Per run: its scores {(item, stratum, metric): (value, status, error, judge model, dataset
    version)} and gate."""
    import sqlalchemy as sa

    engine = sa.create_engine(results_url)
    found = {}
    with engine.connect() as conn:
        for run_id in run_ids:
            [(gate_passed, gate, version)] = conn.execute(
                sa.text(
                    "SELECT gate_passed, gate, dataset_version FROM eval_runs WHERE run_id = :r"
                ),
                {"r": run_id},
            ).all()
            scores = conn.execute(
                sa.text(
                    "SELECT item_id, stratum, metric, value, status, error, judge_model, dataset_version "
                    "FROM eval_scores WHERE run_id = :r"
                ),
                {"r": run_id},
            ).all()
            found[run_id] = {
                "gate_passed": gate_passed,
                "gate": json.loads(gate) if isinstance(gate, str) else gate,
                "dataset_version": version,
                "scores": {tuple(row[:3]): tuple(row[3:]) for row in scores},
            }
    engine.dispose()
    return found


EMBEDDING_METRICS = {"answer_relevancy"}
"""Scores computed from the local model's float32 vectors. A vector's last bits depend on which
texts shared its forward pass (BLAS picks its kernels by the batch's shape; `EmbeddingBatches`
batches whatever requests were pending together), so two runs agree to about 1e-7 (measured), not
bit for bit; every other score must be equal. The gate counts a change under its SCORE_RESOLUTION
(1e-6) as none: the test allows the same."""


def same_score(metric: str, mine: tuple, theirs: tuple, rounding: float) -> bool:
    """(value, status, error, judge model, dataset version): equal, the value of an embedding metric
    within rounding."""
    if metric not in EMBEDDING_METRICS or mine[0] is None or theirs[0] is None:
        return mine == theirs
    return mine[1:] == theirs[1:] and abs(mine[0] - theirs[0]) <= rounding


def same_within(a, b, tolerance: float) -> bool:
    """Equal, floats within `tolerance` (the gate's statistics over answer relevancy carry its
    rounding)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_within(a[k], b[k], tolerance) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_within(x, y, tolerance) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tolerance or a == b  # inf == inf
    return a == b


def golden_items(path: Path) -> dict[str, dict]:
    import pyarrow.parquet as pq

    return {row["item_id"]: row for row in pq.read_table(path).to_pylist()}


@pytest.mark.stack
def test_two_celery_workers_publish_what_one_process_publishes(stack: StackSession, tmp_path):
    """All four DAGs ran on two Celery workers that share only the services and the data workspace
    (this session's stack); the same runs, every step in one process on one machine (`ragwatch
    traces sample`, `golden build`, `eval offline`, `eval online`: one home, one temp folder, no
    XCom, no broker), publish the same: the trace partition byte for byte, the golden set's items,
    every score and the gate."""
    scheduled = scheduled_evals(stack)
    gated = gated_offline_run(stack)
    began = time.monotonic()

    # Mapped tasks went to both workers, each of which recorded its own host name and wrote its
    # temporary files (multiprocessing's, torch's) in its own temp folder.
    by_host = mapped_tasks_by_host(stack)
    assert sorted(by_host) == stack.plan.workers, {
        host: len(tasks) for host, tasks in by_host.items()
    }
    print(
        f"\nmapped task instances per worker: { {host: len(tasks) for host, tasks in by_host.items()} }"
    )
    for name in stack.plan.workers:
        assert any(Path(stack.plan.services[name].env["TMPDIR"]).iterdir()), (
            f"{name}'s tasks left nothing in its TMPDIR"
        )

    from pipelines.core.workspace import Workspace
    from pipelines.evaluation.runs.offline import run_offline_eval
    from pipelines.evaluation.runs.online import run_online_eval
    from pipelines.evaluation.runs.params import eval_params, online_params
    from pipelines.evaluation.statistics.scores import SCORE_RESOLUTION
    from pipelines.golden.params import load_golden_params
    from pipelines.golden.steps import build_golden
    from pipelines.traces.steps import run_trace_sampling

    settings = one_process_settings(stack, tmp_path / "one-process")
    stack_workspace = Workspace(Path(plan_env(stack)["RAGWATCH_WORKSPACE"]))
    one_workspace = Workspace.from_settings(settings)
    day = datetime.fromisoformat(scheduled["trace_sampling"]["logical_date"]).date()

    # golden_build: the first start's run (before any trace partition existed, as here).
    [first_build] = [r for r in stack.runs("golden_build") if r["run_type"] != "asset_triggered"][
        :1
    ]
    params = load_golden_params(settings)
    build_golden(
        settings, params, logical_date=datetime.fromisoformat(first_build["run_after"]).date()
    )
    ours, theirs = (
        golden_items(w.golden(params.name).released_items) for w in (one_workspace, stack_workspace)
    )
    assert ours.keys() == theirs.keys() and ours == theirs

    # trace_sampling: the scheduled day's partition, byte for byte.
    run_trace_sampling(
        settings, day
    )  # versioned too: the online run names the partition by its DVC hash
    stack_partition, one_partition = (
        stack_workspace.traces_partition(day).root,
        one_workspace.traces_partition(day).root,
    )
    files = sorted(
        p.relative_to(stack_partition) for p in stack_partition.rglob("*") if p.is_file()
    )
    assert files == sorted(
        p.relative_to(one_partition) for p in one_partition.rglob("*") if p.is_file()
    )
    assert [
        f for f in files if (stack_partition / f).read_bytes() != (one_partition / f).read_bytes()
    ] == []

    # offline_eval, scheduled then gated against it; online_eval for the scheduled day.
    end = lambda run: datetime.fromisoformat(run["data_interval_end"]).date()
    first, _ = run_offline_eval(
        settings, eval_params(settings), logical_date=end(scheduled["offline_eval"])
    )
    second, _ = run_offline_eval(
        settings, eval_params(settings, limit=GATED_RUN_ITEMS), logical_date=end(gated)
    )
    online = run_online_eval(settings, day, online_params(settings), push=False)
    run_ids = [first.run_id, second.run_id, online.run_id]
    ours, theirs = (
        published_results(settings.resolved_results_url, run_ids),
        published_results(plan_env(stack)["RAGWATCH_RESULTS_URL"], run_ids),
    )
    for run_id in run_ids:
        assert ours[run_id]["scores"].keys() == theirs[run_id]["scores"].keys(), run_id
        differ = {
            key: (mine, theirs[run_id]["scores"][key])
            for key, mine in ours[run_id]["scores"].items()
            if not same_score(key[2], mine, theirs[run_id]["scores"][key], SCORE_RESOLUTION)
        }
        assert ours[run_id]["scores"] and not differ, (
            f"{run_id}: {len(differ)} scores differ, e.g. {sorted(differ.items())[:5]}"
        )
        assert ours[run_id]["gate_passed"] == theirs[run_id]["gate_passed"], run_id
        assert same_within(ours[run_id], theirs[run_id], SCORE_RESOLUTION), run_id
    assert theirs[second.run_id]["gate_passed"] is not None  # the gated run did decide
    stack.timings["the same runs in one process"] = time.monotonic() - began


# --- 8. Eight weeks of offline_eval backfilled, gated in order ------------------------------------


def results_db(stack: StackSession):
    import sqlalchemy as sa

    return sa.create_engine(plan_env(stack)["RAGWATCH_RESULTS_URL"])


def stored_offline_runs(stack: StackSession, weeks: list[datetime]) -> dict[datetime, list[dict]]:
    """Per week (its logical date), every offline run row the results DB holds for it: a run is
    saved under the end of the week it covers."""
    import sqlalchemy as sa

    ends = {(week + timedelta(weeks=1)).date(): week for week in weeks}
    engine = results_db(stack)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT run_id, logical_date, dataset_version, gate_passed, gate FROM eval_runs WHERE suite = 'offline'"
            )
        ).mappings()
        found = {week: [] for week in weeks}
        for row in rows:
            if row["logical_date"] in ends:
                found[ends[row["logical_date"]]].append(dict(row))
    engine.dispose()
    return found


def assert_same_scores(stack: StackSession, run_id: str, control_id: str) -> None:
    """Nothing lost, nothing extra, nothing different: the run's scores are its control's."""
    from pipelines.evaluation.statistics.scores import SCORE_RESOLUTION

    results = published_results(plan_env(stack)["RAGWATCH_RESULTS_URL"], [run_id, control_id])
    mine, control = results[run_id]["scores"], results[control_id]["scores"]
    assert control and mine.keys() == control.keys(), (run_id, len(mine), len(control))
    differ = {
        k: (mine[k], control[k])
        for k in mine
        if not same_score(k[2], mine[k], control[k], SCORE_RESOLUTION)
    }
    assert not differ, (
        f"{run_id}: {len(differ)} scores differ from {control_id}'s, e.g. {sorted(differ.items())[:5]}"
    )


def assert_gauges_equal_the_store(stack: StackSession) -> None:
    """The offline gauges on the Pushgateway are the newest offline run's aggregates in the results
    DB, item counts included: a past week's run never pushed over them, and the newest run's push
    lost nothing."""
    from pipelines.core.records import gauge_name
    from pipelines.evaluation.outputs.push import as_pushed, read_back
    from pipelines.evaluation.statistics.aggregates import aggregate
    from pipelines.stores.results import ResultsStore

    store = ResultsStore(plan_env(stack)["RAGWATCH_RESULTS_URL"])
    try:
        newest = store.latest_run("offline")
        aggregates = as_pushed(aggregate(store.scores(newest.run_id)))
    finally:
        store.dispose()
    expected = {}
    for a in aggregates:
        expected[("rag_eval_items", a.stratum, a.metric)] = a.n_items
        expected[("rag_eval_failed_items", a.stratum, a.metric)] = a.n_failed
        if a.mean is not None:
            expected[(gauge_name(a.metric), a.stratum, None)] = a.mean
    [group] = [
        g for g in read_back(stack.plan.pushgateway_url) if g["labels"].get("suite") == "offline"
    ]
    pushed = {
        (name, sample["labels"]["stratum"], sample["labels"].get("metric")): sample["value"]
        for name, samples in group["metrics"].items()
        if name in {key[0] for key in expected}
        for sample in samples
    }
    assert pushed.keys() == expected.keys(), (
        newest.run_id,
        sorted(pushed.keys() ^ expected.keys())[:10],
    )
    wrong = {k: (pushed[k], v) for k, v in expected.items() if abs(pushed[k] - v) > 1e-12}
    assert not wrong, (
        f"gauges that are not {newest.run_id}'s aggregates: {sorted(wrong.items())[:5]}"
    )


def instance(stack: StackSession, run_id: str, task_id: str) -> dict:
    path = f"/api/v2/dags/offline_eval/dagRuns/{quote(run_id, safe='')}/taskInstances/{task_id}"
    response = stack.api("GET", path)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.stack
def test_a_backfill_of_eight_weeks_on_two_workers_gates_each_week_against_the_week_before(
    stack: StackSession,
):
    """`POST /api/v2/backfills` of eight past weeks of offline_eval with `max_active_runs` 8: the
    runs go side by side on the two workers (a backfill's runs count against its own
    max_active_runs, never the DAG's), yet each week is one run and one row in the results DB, gated
    against the week before it, the first week the reference of the rest."""
    gated_offline_run(stack)  # the scheduled weeks were gated before these older weeks exist
    weeks = [offline_week(stack, n) for n in OFFLINE_WEEKS["backfill"]]
    earlier = stored_offline_runs(stack, [weeks[0] - timedelta(weeks=n) for n in range(53)] + weeks)
    assert not any(earlier.values()), (
        "the backfilled weeks are the oldest offline runs: nothing gated them yet"
    )
    began = time.monotonic()
    body = {
        "dag_id": "offline_eval",
        "from_date": weeks[0].isoformat(),
        "to_date": weeks[-1].isoformat(),
        # Airflow's rule for a DAG with depends_on_past: "none" is refused
        "reprocess_behavior": "failed",
        "max_active_runs": len(weeks),
        "dag_run_conf": {"limit": FAULT_RUN_ITEMS},
    }
    response = stack.api("POST", "/api/v2/backfills", json=body)
    assert response.status_code == 200, response.text
    runs = stack.wait_for_runs("offline_eval", "backfill", len(weeks), EVAL_BUDGET_S)
    stack.timings[f"backfill of {len(weeks)} offline weeks"] = took = time.monotonic() - began
    print(f"\n{len(weeks)} weeks of offline_eval backfilled in {took:.0f} s")
    runs.sort(key=lambda r: r["logical_date"])
    assert [(datetime.fromisoformat(r["logical_date"]), r["state"]) for r in runs] == [
        (w, "success") for w in weeks
    ]

    stored = stored_offline_runs(stack, weeks)
    assert {w: len(rows) for w, rows in stored.items()} == {w: 1 for w in weeks}, (
        "one run row per week"
    )
    chain = [stored[w][0] for w in weeks]
    first = chain[0]
    assert (
        first["gate"] is None and first["gate_passed"] is None
    )  # no run before it to gate against
    for n, (before, run) in enumerate(itertools.pairwise(chain), 1):
        gate = run["gate"]
        # The week before is the baseline; the first week the reference (for the second week that is
        # its baseline).
        assert (gate["baseline"], gate["reference"]) == (
            before["run_id"],
            first["run_id"] if n > 1 else None,
        ), (
            run["run_id"],
            gate["summary"],
        )
        assert gate["gated_metrics"] and run["gate_passed"] is True, gate[
            "summary"
        ]  # it decided, and passed
        assert run["dataset_version"] == first["dataset_version"]
    # How: the runs went side by side (a week started before the week before it ended), each week's
    # finalize (the gate) after the week before's.
    when = lambda ti, key: datetime.fromisoformat(ti[key])
    assert any(when(b, "start_date") < when(a, "end_date") for a, b in itertools.pairwise(runs)), (
        "the runs never overlapped"
    )
    finalizes = [instance(stack, r["dag_run_id"], "finalize") for r in runs]
    assert all(
        when(b, "start_date") >= when(a, "end_date") for a, b in itertools.pairwise(finalizes)
    ), [(f["dag_run_id"], f["start_date"], f["end_date"]) for f in finalizes]

    scores = published_results(plan_env(stack)["RAGWATCH_RESULTS_URL"], [first["run_id"]])[
        first["run_id"]
    ]["scores"]
    assert len({item for item, _, _ in scores}) == FAULT_RUN_ITEMS
    for run in chain[1:]:  # the same items, golden version and target: every week scores the same
        assert_same_scores(stack, run["run_id"], first["run_id"])
    assert_gauges_equal_the_store(stack)


# --- 9. Faults mid-run, each against an undisturbed control ---------------------------------------


def undisturbed_control(stack: StackSession) -> dict:
    """The last backfilled week's run: the items, golden version, target and corpus (the corpus
    refresh test edits it later) a run under a fault evaluates, run on the same two workers with
    nothing killed."""
    week = offline_week(stack, OFFLINE_WEEKS["backfill"][-1])
    found = stored_offline_runs(stack, [week])[week]
    assert found, (
        "the eight-week backfill runs first: its weeks are the control of the runs under a fault"
    )
    return found[0]


def trigger_week(stack: StackSession, name: str, control: dict) -> tuple[str, datetime]:
    """Trigger offline_eval for the week OFFLINE_WEEKS[name] on the control's items: (Airflow run
    id, week)."""
    week = offline_week(stack, OFFLINE_WEEKS[name])
    run_id = name.replace(" ", "-")
    body = {
        "dag_run_id": run_id,
        "logical_date": week.isoformat(),
        # Given, as the scheduler and a backfill give them: a manual run's inferred interval is the
        # week before.
        "data_interval_start": week.isoformat(),
        "data_interval_end": (week + timedelta(weeks=1)).isoformat(),
        "conf": {
            "limit": FAULT_RUN_ITEMS,
            "golden_version": control["dataset_version"].split("@", 1)[1],
        },
    }
    triggered = stack.api("POST", "/api/v2/dags/offline_eval/dagRuns", json=body)
    assert triggered.status_code == 200, triggered.text
    return run_id, week


def task_instances(stack: StackSession, run_id: str) -> list[dict]:
    path = f"/api/v2/dags/offline_eval/dagRuns/{run_id}/taskInstances"
    return stack.api("GET", path, params={"limit": 500}).json()["task_instances"]


def running_on_a_worker(stack: StackSession, run_id: str) -> list[dict]:
    """The run's task instances running on a worker, once there is one."""
    running = [t for t in task_instances(stack, run_id) if t["state"] == "running"]
    return [t for t in running if t.get("hostname") in stack.plan.workers]


def finished_run(stack: StackSession, run_id: str, timeout: float) -> dict:
    def finished() -> dict | None:
        run = stack.api("GET", f"/api/v2/dags/offline_eval/dagRuns/{run_id}").json()
        return run if run["state"] in TERMINAL else None

    run = wait(finished, timeout, f"the run {run_id} to finish", 1)
    assert run["state"] == "success", f"{run}\n{stack.diagnostics()}"
    return run


def assert_as_undisturbed(stack: StackSession, week: datetime, control: dict) -> None:
    """The run of `week` that went through a fault is one row, its scores its control's, gated
    against the run the results DB holds before it (what an undisturbed run is gated against), and
    the gauges are still the store's."""
    from pipelines.evaluation.statistics.gate.gated_metrics import GATED_METRICS
    from pipelines.evaluation.statistics.gate.rule import DEFAULT_MIN_PAIRS
    from pipelines.evaluation.statistics.gate.run_gate import measured_metrics
    from pipelines.stores.results import ResultsStore

    [run] = stored_offline_runs(stack, [week])[week]
    assert run["dataset_version"] == control["dataset_version"]
    assert_same_scores(stack, run["run_id"], control["run_id"])
    store = ResultsStore(plan_env(stack)["RAGWATCH_RESULTS_URL"])
    try:
        # As the gate chooses it (run_gate.gate_against_baseline); the stack keeps the default
        # gate_min_pairs.
        measured = measured_metrics(store.scores(run["run_id"]), min_ok=DEFAULT_MIN_PAIRS)
        expected = store.baseline_for(
            store.get_run(run["run_id"]),
            metrics=GATED_METRICS,
            min_ok=DEFAULT_MIN_PAIRS,
            wanted=measured,
        )
    finally:
        store.dispose()
    assert expected is not None and run["gate"]["baseline"] == expected.run_id, run["gate"][
        "summary"
    ]
    assert measured and run["gate"]["gated_metrics"] and run["gate_passed"] is True, run["gate"][
        "summary"
    ]
    assert_gauges_equal_the_store(stack)


@pytest.mark.stack
def test_the_scheduler_killed_mid_run_the_run_finishes_as_undisturbed(stack: StackSession):
    """`kill -9` of the scheduler (its process group) while a run's task runs on a worker, then
    `make up`'s code: the task finishes on its worker, the restarted scheduler adopts the run, and
    the run publishes what its control did."""
    control = undisturbed_control(stack)
    run_id, week = trigger_week(stack, "scheduler killed", control)
    wait(
        lambda: running_on_a_worker(stack, run_id),
        600,
        "a task of the run to start on a worker",
        0.3,
    )
    scheduler = ls.running_pid(stack.plan.state, "airflow-scheduler")
    os.killpg(scheduler, signal.SIGKILL)
    killed = time.monotonic()
    ls.up(stack.home)
    assert ls.running_pid(stack.plan.state, "airflow-scheduler") not in (
        None,
        scheduler,
    )  # a new one
    finished_run(stack, run_id, EVAL_BUDGET_S)
    stack.timings["the scheduler killed: its run finished"] = recovered = time.monotonic() - killed
    print(f"\nthe scheduler killed: its run finished {recovered:.0f} s after the kill")
    assert recovered <= 120, recovered
    assert_as_undisturbed(stack, week, control)


@pytest.mark.stack
def test_a_worker_killed_mid_task_has_its_task_retried_on_the_other_within_two_minutes(
    stack: StackSession,
):
    """`kill -9` of a Celery worker (its whole process group: the task's process too) while it runs
    a task: the scheduler fails the task once its heartbeat is 60 s late and retries it 20-40 s
    later on the worker still up; the run publishes what its control did."""
    control = undisturbed_control(stack)
    run_id, week = trigger_week(stack, "worker killed", control)
    running = wait(
        lambda: running_on_a_worker(stack, run_id),
        600,
        "a task of the run to start on a worker",
        0.3,
    )
    victim = running[0]["hostname"]
    hit = {
        (t["task_id"], t["map_index"]): t["try_number"] for t in running if t["hostname"] == victim
    }
    os.killpg(ls.running_pid(stack.plan.state, victim), signal.SIGKILL)
    killed = time.monotonic()

    def retried() -> dict | None:
        now = {(t["task_id"], t["map_index"]): t for t in task_instances(stack, run_id)}
        back = {
            key: t
            for key, t in now.items()
            if key in hit and t["try_number"] > hit[key] and t["state"] in ("running", "success")
        }
        finished = {
            key
            for key, t in now.items()
            if key in hit and t["state"] == "success" and t["try_number"] == hit[key]
        }
        return back if back and set(back) | finished == set(hit) else None

    back = wait(retried, 300, "the killed worker's tasks to run again", 0.5)
    recovered = time.monotonic() - killed
    stack.timings["a killed worker's task running again"] = recovered
    assert recovered <= 120, recovered
    assert {t["hostname"] for t in back.values()} == set(stack.plan.workers) - {victim}
    ls.up(stack.home)  # the lost worker back, as `make up` brings back what died
    assert all(ls.status(stack.home).values())
    finished_run(stack, run_id, EVAL_BUDGET_S)
    stack.timings["a worker killed: its run finished"] = finished = time.monotonic() - killed
    print(
        f"\na worker killed: its task ran again {recovered:.0f} s, its run finished {finished:.0f} s after the kill"
    )
    assert_as_undisturbed(stack, week, control)


def kill_postgres(stack: StackSession) -> int:
    """`kill -9` of the PostgreSQL server and all its processes at once, as a lost machine or the
    OOM killer does: Airflow's metadata and the results DB share it, here as in compose."""
    postmaster = ls.status(stack.home)["postgres"]
    assert postmaster, "PostgreSQL is not running"
    children = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster
            ):
                children.append(int(entry.name))
        except OSError:
            continue
    for pid in (postmaster, *children):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return postmaster


@pytest.mark.stack
def test_postgres_killed_mid_run_the_run_finishes_as_undisturbed(stack: StackSession):
    """`kill -9` of the PostgreSQL server while a run's task runs on a worker, then `make up`'s
    code: the server recovers from its log, Airflow's processes reconnect, and the run publishes
    what its control did."""
    control = undisturbed_control(stack)
    run_id, week = trigger_week(stack, "postgres killed", control)
    wait(
        lambda: running_on_a_worker(stack, run_id),
        600,
        "a task of the run to start on a worker",
        0.3,
    )
    postmaster = kill_postgres(stack)
    killed = time.monotonic()
    ls.up(stack.home)
    assert ls.status(stack.home)["postgres"] not in (
        None,
        postmaster,
    )  # a new server, recovered from its log
    stack._token = None
    finished_run(stack, run_id, EVAL_BUDGET_S)
    stack.timings["PostgreSQL killed: its run finished"] = recovered = time.monotonic() - killed
    print(f"\nPostgreSQL killed: its run finished {recovered:.0f} s after the kill")
    assert recovered <= 120, recovered
    assert_as_undisturbed(stack, week, control)


# --- 10. A corpus refresh, as a data team triggers it ---------------------------------------------


@pytest.mark.stack
def test_a_corpus_refresh_notifies_airflow_and_rebuilds_the_golden_set(
    stack: StackSession, tmp_path
):
    """`ragwatch corpus refresh PATH --notify` re-indexes an edited corpus and posts the asset
    event; the asset-triggered golden_build releases a new version whose items citing the edited
    chunks are stale."""
    workspace = Path(plan_env(stack)["RAGWATCH_WORKSPACE"])
    released = workspace / "golden" / "datasets" / "demo" / "_manifest.json"
    before = json.loads(released.read_text())
    corpus = tmp_path / "corpus"
    shutil.copytree(ROOT / "tests" / "data" / "corpus", corpus)
    edited = corpus / "guides" / "limits.md"
    edited.write_text(
        edited.read_text().replace(
            "twenty thousand requests per day", "thirty thousand requests per day"
        )
    )
    triggered_before = len(stack.runs("golden_build", "asset_triggered"))

    env = {**os.environ, **stack.plan.cli_env()}
    refresh = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "corpus", "refresh", str(corpus), "--notify"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert refresh.returncode == 0, refresh.stdout[-3000:] + refresh.stderr[-3000:]
    assert "asset event posted" in refresh.stdout and "documents updated" in refresh.stdout

    began = time.monotonic()
    runs = stack.wait_for_runs(
        "golden_build", "asset_triggered", triggered_before + 1, EVAL_BUDGET_S
    )
    assert runs[0]["state"] == "success", runs
    stack.timings["golden_build after a corpus refresh"] = time.monotonic() - began
    after = json.loads(released.read_text())
    assert int(after["version"][1:]) > int(before["version"][1:])
    assert after["corpus_version"] != before["corpus_version"]
    assert after["stale"], "items citing the edited chunk must be flagged stale and replaced"
    assert all(after_id not in after["stale"] for after_id in after["replacements"])


# --- 11. Idempotent, and recovers from a crash ----------------------------------------------------


@pytest.mark.stack
def test_up_again_changes_nothing_and_up_after_a_crash_recovers(stack: StackSession):
    before = ls.status(stack.home)
    began = time.monotonic()
    ls.up(stack.home)
    assert ls.status(stack.home) == before  # nothing restarted
    stack.timings["up again"] = time.monotonic() - began

    crashed = ls.stack_processes(stack.plan.state)
    for pid, _ in crashed:
        try:
            os.kill(
                pid, signal.SIGKILL
            )  # every process of the stack, PostgreSQL included: a power cut
        except ProcessLookupError:
            pass
    wait(
        lambda: (
            not ls.stack_processes(stack.plan.state) and not any(ls.status(stack.home).values())
        ),
        60,
        "the killed processes to disappear",
        0.5,
    )

    began = time.monotonic()
    ls.up(stack.home)
    stack.timings["up after a crash"] = time.monotonic() - began
    after = ls.status(stack.home)
    assert all(after.values()) and not set(after.values()) & set(before.values()), after
    stack._token = None
    dags = stack.api("GET", "/api/v2/dags", params={"limit": 100}).json()["dags"]
    assert all(not d["is_paused"] for d in dags) and len(dags) == 4
    assert len(stack.runs("trace_sampling", "backfill")) == BACKFILL_DAYS  # the metadata survived
    print(
        f"\nstack timings: start {stack.startup_s:.0f} s, "
        + ", ".join(f"{k} {v:.0f} s" for k, v in stack.timings.items())
    )
