"""The last screen of `make demo`: what ran, the drill's verdict and why, three one-line figures,
where to click.

It fits one screen (at most 60 lines at 100 columns, `MAX_LINES`): each section is a few lines,
lists are cut to their largest entries, and every table stays in the log and the reports."""

from __future__ import annotations

import os

from rich.markup import escape
from rich.text import Text

from pipelines.evaluation.outputs.formatting import interval, number
from pipelines.evaluation.statistics.judge_agreement import MIN_LABELS, TRUSTED_FROM_KAPPA
from ragwatch_harness.demo.recap import DemoRecap

MAX_LINES = 60
WIDTH = 100
FAILED_SHOWN = 4
"""Failing metrics listed under the drill's verdict; the rest are counted."""


def _clip(text: str, width: int = WIDTH - 4) -> str:
    """One line of plain text: a representative question or a path is cut, with an ellipsis, rather
    than wrapped."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _fit(prefix: str, parts: list[str], width: int = WIDTH, sep: str = "; ") -> str:
    """`prefix` and as many of `parts` (markup) as fit one line, then how many were left out."""
    line, left = prefix, len(parts)
    for part in parts:
        more = f"{sep}+{left - 1} more" if left > 1 else ""
        joined = part if line == prefix else f"{sep}{part}"
        if Text.from_markup(line + joined + more).cell_len > width:
            return f"{line}{sep}+{left} more" if line != prefix else line + part
        line, left = line + joined, left - 1
    return line


def _shown_path(path: str) -> str:
    """Relative to the folder the demo runs in, when it lies below it: shorter, and still opens from
    there."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _difference(row) -> str:
    ci = "" if row.ci_low is None else f", 95 % CI {interval(row.ci_low, row.ci_high)}"
    p = (
        ""
        if row.p_adjusted is None
        else ", p < 0.001"
        if row.p_adjusted < 0.001
        else f", p {number(row.p_adjusted)}"
    )
    if row.diff is None:
        return f"{row.metric}: {row.reason}"
    return f"{row.metric} {number(row.baseline_mean)} → {number(row.candidate_mean)} ({row.diff:+.3f}{ci}{p})"


def _drill_lines(recap: DemoRecap) -> list[str]:
    drill = recap.drill
    if drill is None:
        return ["[yellow]no drill run in the results DB[/]"]
    verdict = (
        "[red]FAILED[/]"
        if drill.gate_passed is False
        else "[green]passed[/]"
        if drill.gate_passed
        else "not gated"
    )
    lines = [
        f"{verdict}: the candidate {escape(drill.target)} against {escape(drill.baseline or '–')}"
    ]
    failed = [row for row in [*drill.gate_rows, *drill.reference_rows] if not row.passed]
    seen = set()
    failed = [
        r for r in failed if not (r.metric in seen or seen.add(r.metric))
    ]  # baseline first, once per metric
    for row in failed[:FAILED_SHOWN]:
        lines.append(f"  - {escape(_clip(_difference(row), WIDTH - 6))}")
    if len(failed) > FAILED_SHOWN:
        lines.append(
            f"  - and {len(failed) - FAILED_SHOWN} more metrics (the report lists every one)"
        )
    if not failed:
        lines.append(f"  {escape(_clip(drill.gate, WIDTH - 2))}")
    if recap.alerts is not None:
        fired = [a for a in recap.alerts.alerts if a.state in ("firing", "would fire")]
        names = [escape(name) for name in dict.fromkeys(a.alert for a in fired)]
        lines.append(_fit("  alerts firing: ", names) if names else "  alerts firing: none")
    return lines


def _coverage_lines(recap: DemoRecap) -> list[str]:
    coverage = recap.online.coverage if recap.online else None
    if coverage is None:
        return ["coverage:    not measured (no online run)"]
    if coverage.status != "ok" or coverage.day is None:
        return [f"coverage:    [red]not measured[/] ({escape(_clip(coverage.reason, 70))})"]
    day = coverage.day
    topics = len(coverage.clusters)
    level = (
        f"{number(day.ratio)} {interval(day.level_ci_low, day.level_ci_high)}"
        if day.ratio is not None
        else f"matched {number(day.matched)}, not corrected (the matcher's error rates are unknown)"
    )
    line = (
        f"coverage:    {level} of {day.questions} questions;"
        f" {topics} topic{'s' if topics != 1 else ''} missed"
    )
    largest = (
        f", the largest {coverage.clusters[0].gap_share:.0%} of the day"
        if coverage.clusters
        else ""
    )
    lines = [line + largest if Text.from_markup(line + largest).cell_len <= WIDTH else line]
    how = [
        note
        for note in (
            _threshold_note(coverage),
            f"the demo's designed coverage: {recap.designed_coverage:.2f}"
            if recap.designed_coverage is not None
            else "",
        )
        if note
    ]
    return lines + ([f"{'':13}{'; '.join(how)}"] if how else [])


def _threshold_note(coverage) -> str:
    """How the threshold was set: learnt on the golden set's user questions, or the user's own."""
    t = coverage.threshold
    if t is None:
        return ""
    if t.method == "setting":
        return "threshold: your setting, not calibrated"
    return (
        f"threshold calibrated on {t.positives} user questions" if t.method == "calibrated" else ""
    )


def _trust_line(recap: DemoRecap) -> str:
    run = recap.drill or recap.baseline
    rows = run.judge_trust if run else []
    if not rows:
        return "judge trust: no labels yet (`ragwatch judge labels import` takes them)"
    trusted = [row for row in rows if row.trusted]
    untrusted = [row for row in rows if row.trusted is False]
    head = f"judge trust: {len(trusted)}/{len(rows)} metrics trusted (κ ≥ {TRUSTED_FROM_KAPPA:g}, {MIN_LABELS}+ labels)"
    if untrusted:  # the ones that need a person's eye
        return _fit(
            f"{head}; not: ",
            [f"[red]{row.metric}[/] {number(row.kappa, 2)}" for row in untrusted],
            sep=", ",
        )
    return _fit(f"{head}: ", [f"{row.metric} {number(row.kappa, 2)}" for row in trusted], sep=", ")


def _cost_line(recap: DemoRecap) -> str:
    runs = [
        (label, run.cost)
        for label, run in (
            ("offline", recap.baseline),
            ("drill", recap.drill),
            ("online", recap.online),
        )
        if run is not None and run.cost is not None
    ]
    if not runs:
        return "cost:        not recorded"
    requests = sum(c.total("requests") for _, c in runs)
    cached = sum(c.total("cache_hits") for _, c in runs)
    tokens = sum(c.total("prompt_tokens") + c.total("completion_tokens") for _, c in runs)
    each = ", ".join(f"{label} {c.total('requests'):,.0f}" for label, c in runs)
    # The offline backend counts requests but no tokens: a token figure is shown only where servers
    # reported one.
    shown = (
        f"{tokens / 1e6:.2f} M tokens"
        if tokens >= 1e6
        else f"{tokens:,.0f} tokens"
        if tokens
        else "no tokens reported"
    )
    total = f"{requests:,.0f} model requests ({cached:,.0f} cached), {shown}"
    return _fit("cost:        ", [total, each])


def _where_lines(recap: DemoRecap) -> list[str]:
    lines = []
    for label, run in (("drill report", recap.drill), ("online report", recap.online)):
        if run is not None and run.report:
            path = _shown_path(run.report)
            if len(path) + 17 <= WIDTH:
                lines.append(f"  {label + ':':<15}{escape(path)}")
            else:  # a path is never cut or wrapped: it gets a line of its own
                lines += [f"  {label}:", f"    {escape(path)}"]
    lines.append(
        f"  {'ragwatch page:':<15}{recap.page_url} (after `make up`: the demo runs no web server)"
    )
    if recap.alerts is not None:
        line = f"  {'alerts:':<15}{escape(recap.alerts.source)}"
        # The demo's Prometheus stops with it: say where a lasting one is, when the line has room.
        more = "; `make up` runs one to click"
        lines.append(line + more if Text.from_markup(line + more).cell_len <= WIDTH else line)
    if recap.log:
        lines.append(f"  {'every table:':<15}{escape(_shown_path(recap.log))}")
    return lines


def recap_lines(recap: DemoRecap) -> list[str]:
    """The screen as Rich markup lines (paths are not clipped: a cut path cannot be opened)."""
    lines = ["[bold]What ran[/]"]
    lines += [f"  {escape(_clip(line, WIDTH - 2))}" for line in recap.ran] or [
        "  nothing: no step left a record"
    ]
    lines += ["", "[bold]Regression drill[/]", *_drill_lines(recap), ""]
    lines += [
        *_coverage_lines(recap),
        _trust_line(recap),
        _cost_line(recap),
        "",
        "[bold]Where to click[/]",
    ]
    lines += _where_lines(recap)
    return lines[:MAX_LINES]
