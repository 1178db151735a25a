"""monitoring/: Prometheus config and alert rules checked and unit-tested by promtool itself, and
the Grafana dashboard checked against the Prometheus contract (DESIGN.md § Data contracts).

promtool is Debian's (`prometheus` package, installed by scripts/system-deps.sh): a missing
binary fails with the install hint, never a skip, so CI cannot pass without running the rules.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from pipelines.core.records import METRICS, gauge_name
from pipelines.evaluation.outputs.push import PUSHED_AS

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "monitoring"
PROMETHEUS_CONFIG = MONITORING / "prometheus.yml"
RULES = MONITORING / "rules" / "ragwatch.rules.yml"
RULE_TESTS = [
    MONITORING / "rules" / f"ragwatch.rules{scale}.test.yml" for scale in ("", ".long", ".week")
]
"""The minute-scale cases, the day-scale ones (evaluated every 5 minutes) and the week-scale ones
(every hour): see each file's header."""
DASHBOARD = MONITORING / "grafana" / "dashboards" / "ragwatch.json"
PROVISIONING = MONITORING / "grafana" / "provisioning"

INSTALL_HINT = (
    "promtool not found: run `make test` (scripts/system-deps.sh installs Debian's `prometheus` "
    "package, which ships /usr/bin/promtool) or `apt-get install -y prometheus`"
)

# The contract: what ragwatch pushes, plus what the Pushgateway adds to every group.
EVAL_GAUGES = {
    "rag_eval_items",
    "rag_eval_failed_items",
    "rag_eval_gate_passed",
    "rag_eval_last_success_timestamp_seconds",
    "rag_judge_trusted",
    "rag_judge_agreement_kappa",
    "rag_judge_audit_labels",
    "rag_golden_coverage_ratio",
    "rag_golden_coverage_ratio_ci_low",
    "rag_golden_coverage_ratio_ci_high",
    "rag_judge_noise_share",
    "rag_judge_retest_icc",
    "rag_judge_retest_items",
    "rag_eval_gate_catches",
}
PUSHGATEWAY_GAUGES = {"push_time_seconds", "push_failure_time_seconds"}
SCORE_GAUGES = {gauge_name(PUSHED_AS.get(metric, metric)) for metric in METRICS}
AT_K = re.compile(r"rag_(recall|precision)_at_\d+_score")
AT_K_FAMILIES = {"rag_recall_at_[0-9]+_score", "rag_precision_at_[0-9]+_score"}


def in_contract(name: str) -> bool:
    return name in SCORE_GAUGES | EVAL_GAUGES | PUSHGATEWAY_GAUGES or bool(AT_K.fullmatch(name))


_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "offset",
    "and",
    "or",
    "unless",
    "inf",
    "nan",
}


def metric_names(expr: str) -> tuple[set[str], set[str]]:
    """Metric names a PromQL expression selects, and its `__name__=~` regexes.

    Enough PromQL for our expressions: strings, label matchers, ranges and grouping clauses are
    removed, then every identifier that is not a function call or a keyword is a metric name.
    """
    regexes = set(re.findall(r'__name__=~"([^"]+)"', expr))
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = {m.group(1) for m in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", text)}
    return {n for n in names if n not in _KEYWORDS}, regexes


def promtool(*args: str) -> str:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail(INSTALL_HINT)
    result = subprocess.run(
        [binary, *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"promtool {' '.join(args)} failed:\n{output}"
    return output


def load_yaml(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def alert_rules() -> list[dict]:
    return [
        rule for group in load_yaml(RULES)["groups"] for rule in group["rules"] if "alert" in rule
    ]


def rule(name: str) -> dict:
    (found,) = [r for r in alert_rules() if r["alert"] == name]
    return found


# --- promtool ----------------------------------------------------------------------------------


def test_prometheus_config_is_valid():
    assert "SUCCESS" in promtool("check", "config", str(PROMETHEUS_CONFIG.relative_to(ROOT)))


def test_alert_rules_are_valid():
    assert "SUCCESS" in promtool("check", "rules", str(RULES.relative_to(ROOT)))


def test_alert_rule_unit_tests_pass():
    output = promtool("test", "rules", *(str(path.relative_to(ROOT)) for path in RULE_TESTS))
    assert output.count("SUCCESS") == len(RULE_TESTS), output


# --- Prometheus config and rules ----------------------------------------------------------------


def test_prometheus_keeps_the_pushed_labels_and_loads_the_rules():
    config = load_yaml(PROMETHEUS_CONFIG)
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    # Without honor_labels the pushed job="ragwatch" becomes exported_job and no rule matches.
    assert jobs["pushgateway"]["honor_labels"] is True
    assert jobs["pushgateway"]["static_configs"][0]["targets"] == ["pushgateway:9091"]
    assert "prometheus" in jobs
    assert [(PROMETHEUS_CONFIG.parent / path).resolve() for path in config["rule_files"]] == [
        RULES.resolve()
    ]


def test_every_alert_has_a_firing_and_a_quiet_unit_test():
    firing, quiet = set(), set()
    for group in (g for path in RULE_TESTS for g in load_yaml(path)["tests"]):
        for case in group.get("alert_rule_test", []):
            (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
    names = {r["alert"] for r in alert_rules()}
    assert names - firing == set(), "alerts without a firing test case"
    assert names - quiet == set(), "alerts without a test case where they stay quiet"
    assert (firing | quiet) - names == set(), "test cases for alerts that do not exist"


def test_every_alert_says_what_it_means_and_what_to_do_first():
    for r in alert_rules():
        assert r["labels"]["severity"] in {"warning", "critical"}, r["alert"]
        for key in ("summary", "description", "runbook"):
            assert len(r["annotations"].get(key, "").strip()) > 20, (r["alert"], key)


def test_alerts_use_only_contract_metrics():
    for r in alert_rules():
        names, regexes = metric_names(r["expr"])
        assert not regexes, r["alert"]
        assert names, r["alert"]
        # `up` is Prometheus' own scrape health, for the Pushgateway-down alert.
        assert {n for n in names if not in_contract(n)} <= {"up"}, r["alert"]


def test_faithfulness_alert_is_the_briefs_example():
    low = rule("RagFaithfulnessLow")
    assert low["expr"] == 'avg_over_time(rag_faithfulness_score{stratum="all"}[30m]) < 0.80'
    assert (low["for"], low["labels"]["severity"]) == ("10m", "warning")
    critical = rule("RagFaithfulnessCritical")
    assert critical["expr"] == 'avg_over_time(rag_faithfulness_score{stratum="all"}[30m]) < 0.75'
    assert critical["labels"]["severity"] == "critical"


@pytest.mark.parametrize(
    ("alert", "gauge", "comparison"),
    [
        ("RagContextPrecisionLow", "rag_context_precision_score", "< 0.60"),
        ("RagContextRecallLow", "rag_context_recall_score", "< 0.70"),
        ("RagAnswerRelevanceLow", "rag_answer_relevancy_score", "< 0.70"),
        ("RagNoiseSensitivityHigh", "rag_noise_delta_f_score", "> 0.15"),
        ("RagToolSelectionAccuracyLow", "rag_tool_selection_accuracy_score", "< 0.85"),
    ],
)
def test_score_alerts_use_the_briefs_bands(alert, gauge, comparison):
    r = rule(alert)
    assert r["expr"] == f'avg_over_time({gauge}{{stratum="all"}}[30m]) {comparison}'
    assert r["for"] == "10m"


def test_pipeline_alerts_watch_the_pushgateway_contract():
    assert rule("RagEvalGateFailed")["expr"] == "rag_eval_gate_passed == 0"
    age = 'time() - push_time_seconds{job="ragwatch",suite="%s"}'
    assert rule("RagOnlineEvalStale")["expr"] == age % "online" + " > 26 * 3600"
    assert rule("RagOfflineEvalStale")["expr"] == age % "offline" + " > 8 * 86400"
    assert "push_failure_time_seconds" in rule("RagEvalPushFailing")["expr"]
    assert rule("RagEvalFailedItemsHigh")["expr"].endswith("> 0.1")


# --- Grafana -----------------------------------------------------------------------------------


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def data_panels() -> list[dict]:
    return [p for p in dashboard()["panels"] if p["type"] != "row"]


def exprs(panel: dict) -> list[str]:
    return [t["expr"] for t in panel.get("targets", [])]


def test_dashboard_is_provisioned_against_the_provisioned_datasource():
    (datasource,) = load_yaml(PROVISIONING / "datasources" / "prometheus.yml")["datasources"]
    assert datasource["type"] == "prometheus" and datasource["url"] == "http://prometheus:9090"
    uids = {p["datasource"]["uid"] for p in data_panels()}
    uids |= {t["datasource"]["uid"] for p in data_panels() for t in p["targets"]}
    uids |= {v["datasource"]["uid"] for v in dashboard()["templating"]["list"]}
    assert uids == {datasource["uid"]}
    (provider,) = load_yaml(PROVISIONING / "dashboards" / "ragwatch.yml")["providers"]
    assert provider["type"] == "file" and provider["options"]["path"]


def test_dashboard_has_suite_and_stratum_variables_used_by_every_score_panel():
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    assert {"suite", "stratum"} <= set(variables)
    for name in ("suite", "stratum"):
        assert variables[name]["includeAll"] and variables[name]["allValue"] == ".*"
    score_panels = [p for p in data_panels() if any("_score" in e for e in exprs(p))]
    assert len(score_panels) >= len(METRICS)
    for panel in score_panels:
        for expr in exprs(panel):
            assert 'suite=~"$suite"' in expr and 'stratum=~"$stratum"' in expr, panel["title"]


def test_dashboard_references_only_contract_metrics():
    for panel in data_panels():
        for expr in exprs(panel):
            names, regexes = metric_names(expr)
            assert {n for n in names if not in_contract(n)} == set(), (panel["title"], expr)
            assert regexes <= AT_K_FAMILIES, (panel["title"], expr)


def test_every_contract_metric_has_a_panel():
    referenced: set[str] = set()
    families: set[str] = set()
    for panel in data_panels():
        for expr in exprs(panel):
            names, regexes = metric_names(expr)
            referenced |= names
            families |= regexes
    assert SCORE_GAUGES - referenced == set(), "score gauges without a panel"
    assert EVAL_GAUGES - referenced == set(), "eval gauges without a panel"
    assert "push_time_seconds" in referenced
    assert families == AT_K_FAMILIES, "recall@k and precision@k need a panel each"


def thresholds(panel: dict) -> list[float]:
    steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
    return [s["value"] for s in steps if s["value"] is not None]


@pytest.mark.parametrize(
    ("gauge", "bands"),
    [
        ("rag_faithfulness_score", [0.75, 0.85]),
        ("rag_context_precision_score", [0.60]),
        ("rag_context_recall_score", [0.70]),
        ("rag_answer_relevancy_score", [0.70]),
        ("rag_noise_delta_f_score", [0.15]),
        ("rag_tool_selection_accuracy_score", [0.85]),
    ],
)
def test_score_panels_draw_the_briefs_bands(gauge, bands):
    (panel,) = [
        p
        for p in data_panels()
        if any(e.startswith(gauge + "{") for e in exprs(p)) and len(exprs(p)) == 1
    ]
    assert thresholds(panel) == bands
    assert panel["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] != "off"


def test_health_panels_show_gate_ages_and_failed_items():
    by_title = {p["title"]: p for p in data_panels()}
    assert any("rag_eval_gate_passed" in e for e in exprs(by_title["Regression gate"]))
    age = by_title["Last successful eval (age)"]
    assert all(e.startswith("time() - rag_eval_last_success_timestamp_seconds") for e in exprs(age))
    # The same staleness bands as the alerts: 26 h online, 8 days offline.
    assert thresholds(age) == [26 * 3600]
    assert (
        age["fieldConfig"]["overrides"][0]["properties"][0]["value"]["steps"][1]["value"]
        == 8 * 86400
    )
    ratio = by_title["Failed-item ratio"]
    assert "rag_eval_failed_items" in exprs(ratio)[0] and "/ (rag_eval_items" in exprs(ratio)[0]
    assert thresholds(ratio) == [0.1]


def test_dashboard_panels_do_not_overlap():
    taken: set[tuple[int, int]] = set()
    for panel in dashboard()["panels"]:
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24, panel["title"]
        cells = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not cells & taken, panel["title"]
        taken |= cells
    assert len({p["id"] for p in dashboard()["panels"]}) == len(dashboard()["panels"])
