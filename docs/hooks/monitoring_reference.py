"""The gauges and alerts reference pages, generated at build time from the code that defines them.

Gauges: every `Gauge("rag_…", "help", …)` in pipelines/ (read with `ast`, so nothing is imported or
pushed). Alerts: every rule of monitoring/rules/ragwatch.rules.yml with its expression, wait,
severity and annotations.
"""

from __future__ import annotations

import ast
from pathlib import Path

import yaml
from markdown_text import cell, prose

GAUGES_PAGE, ALERTS_PAGE = "reference/gauges.md", "reference/alerts.md"


def gauges(root: Path) -> list[tuple[str, str, str]]:
    """(name, help, defining module) of every gauge with a literal name, sorted by name."""
    found = {}
    for path in sorted((root / "pipelines").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Gauge"
                and len(node.args) >= 2
                and all(isinstance(a, ast.Constant) for a in node.args[:2])
            ):
                found[node.args[0].value] = (node.args[1].value, path.relative_to(root).as_posix())
    return [(name, help_text, module) for name, (help_text, module) in sorted(found.items())]


def alerts(root: Path) -> list[dict]:
    groups = yaml.safe_load((root / "monitoring/rules/ragwatch.rules.yml").read_text())["groups"]
    return [
        {"group": group["name"], **rule}
        for group in groups
        for rule in group["rules"]
        if "alert" in rule
    ]


def render_gauges(rows: list[tuple[str, str, str]]) -> str:
    lines = [
        "# Gauges",
        "",
        (
            "Generated from the gauge definitions in `pipelines/` at build time. Every run pushes to the Pushgateway "
            "(or, without one, to `.ragwatch/metrics/*.prom`) under the grouping key `job` + `suite` + `target` "
            "(+ `app` online), never a run id; only the newest run of a suite is pushed, so a backfill never "
            "overwrites today's gauges."
        ),
        "",
        (
            "Besides the gauges below, each metric is pushed as `rag_<metric>_score{stratum}` (`@` becomes `_at_`: "
            "`rag_recall_at_5_score`; `context_precision_share` is pushed as `rag_context_precision_score`); "
            '`stratum="all"` is the overall value. The metrics themselves are defined in [Metrics](metrics.md).'
        ),
        "",
        "| gauge | meaning | defined in |",
        "|---|---|---|",
    ]
    lines += [f"| `{name}` | {cell(help_text)} | `{module}` |" for name, help_text, module in rows]
    return "\n".join(lines) + "\n"


def render_alerts(rules: list[dict]) -> str:
    lines = [
        "# Alerts",
        "",
        (
            "Generated from `monitoring/rules/ragwatch.rules.yml` at build time; each rule has a firing and a quiet "
            "case in the `promtool test rules` files beside it (tests/unit/test_monitoring.py runs them). Score alerts "
            'read `stratum="all"` only and average over 30 minutes, so one odd scrape never pages.'
        ),
        "",
    ]
    for rule in rules:
        annotations = rule.get("annotations", {})
        lines += [
            f"## {rule['alert']}",
            "",
            (
                f"Severity **{rule.get('labels', {}).get('severity', 'none')}**, fires after "
                f"{rule.get('for', '0s')} (group `{rule['group']}`)."
            ),
            "",
            "```promql",
            str(rule["expr"]).strip(),
            "```",
            "",
        ]
        for key in ("summary", "description", "runbook"):
            if key in annotations:
                lines += [f"**{key.capitalize()}**: {prose(str(annotations[key]))}", ""]
    return "\n".join(lines)


def on_files(files, config):
    from mkdocs.structure.files import File

    root = Path(config.config_file_path).parent
    files.append(File.generated(config, GAUGES_PAGE, content=render_gauges(gauges(root))))
    files.append(File.generated(config, ALERTS_PAGE, content=render_alerts(alerts(root))))
    return files
