"""An eval run's summary: scores, gate, diagnosis, judge trust, cost, coverage; dry-run
estimates."""

from __future__ import annotations

from rich.markup import escape

from pipelines.cli.render.console import console
from pipelines.cli.render.tables import ReadableTable


def score_table(title: str, overall) -> ReadableTable:
    from pipelines.evaluation.outputs.formatting import interval, number

    table = ReadableTable(title=title)
    table.add_column("metric", "name")
    for column in ("n", "failed", "mean", "95 % CI"):
        table.add_column(column)
    table.add_column("interval", "text")
    for row in overall:
        table.add_row(
            row.metric,
            str(row.n),
            str(row.n_failed),
            number(row.mean),
            interval(row.ci_low, row.ci_high),
            row.ci_method or "–",
        )
    return table


def gate_table(
    summary, role: str = "baseline", run_id: str | None = None, rows=None
) -> ReadableTable:
    from pipelines.evaluation.outputs.formatting import interval, number

    table = ReadableTable(
        title=escape(f"paired differences, {summary.target} − {role} {run_id or summary.baseline}"),
        caption="catches: the smallest drop of the mean this gate fails 90 % of the time at its n",
    )
    table.add_column("metric", "name")
    for column in (
        "pairs",
        role,
        "candidate",
        "difference",
        "95 % CI",
        f"p ({summary.gate_correction})",
        "catches",
    ):
        table.add_column(column)
    table.add_column("verdict", "text")
    for row in summary.gate_rows if rows is None else rows:
        table.add_row(
            row.metric,
            str(row.n_pairs),
            number(row.baseline_mean),
            number(row.candidate_mean),
            "–" if row.diff is None else f"{row.diff:+.3f}",
            interval(row.ci_low, row.ci_high),
            number(row.p_adjusted),
            number(row.detectable_drop, 2),
            verdict_cell(row),
        )
    return table


def verdict_cell(row) -> str:
    """pass / FAIL, or why the metric was not gated ("not gated: n = 7 < 10")."""
    return "[red]FAIL" if not row.passed else "[green]pass" if row.gated else escape(row.status)


def print_eval_summary(summary) -> None:
    from pipelines.evaluation.statistics.diagnose import UNCORRECTED

    console.print(
        score_table(
            escape(
                f"{summary.suite} eval {summary.logical_date} — {summary.target} on "
                f"{summary.dataset_version} ({summary.items} items)"
            ),
            summary.overall,
        )
    )
    if summary.generator_model:
        console.print(f"generator: {escape(summary.generator_model)}")
    if summary.gate_rows:
        console.print(gate_table(summary))
    if summary.reference_rows:
        console.print(gate_table(summary, "reference", summary.reference, summary.reference_rows))
    colour = "[green]" if summary.gate_passed else "[red]" if summary.gate_passed is False else ""
    console.print(f"gate: {colour}{escape(summary.gate)}")
    if summary.diagnosis:
        correction = (
            f"{summary.diagnosis_correction} over every band claim"
            if summary.diagnosis_correction != UNCORRECTED
            else "no correction: each claim on its own interval"
        )
        console.print(f"diagnosis (bands need evidence; {correction}):")
    else:
        console.print("diagnosis: no metric with an operating threshold was scored")
    for line in summary.diagnosis:
        console.print(f"  - {escape(line)}")
    for row in summary.judge_trust:
        console.print(judge_trust_line(row))
    for row in summary.judge_noise:
        console.print(judge_noise_line(row))
    if summary.judge_audit_queued:
        console.print(
            f"{summary.judge_audit_queued} judged items queued for labelling in the inbox (judge-audit-*.csv); "
            "`ragwatch judge labels import FILE` takes them back"
        )
    if summary.cost is not None:
        console.print(run_cost_table(summary.cost))
        if summary.cost.budget is not None:
            console.print(
                f"token budget {summary.cost.budget.cap:,}: {summary.cost.skipped_for_budget:,} scores "
                f'skipped for the budget (reason "budget", missing to the gate)'
            )
    if summary.coverage is not None:
        print_coverage(summary.coverage)
    console.print(f"report: {summary.report}")


def print_coverage(coverage) -> None:
    """The golden set's coverage of the day's traffic per stratum, and the largest topics it
    misses."""
    from pipelines.evaluation.outputs.formatting import interval, number

    if coverage.status != "ok":
        console.print(f"golden coverage: [red]not measured[/] ({escape(coverage.reason)})")
        return
    t = coverage.threshold
    how = (
        f"calibrated on {t.positives} golden user questions: true matches {t.tpr:.0%}, false {t.fpr:.0%}, "
        f"AUC {t.auc:.2f}"
        if t.method == "calibrated"
        else t.note
    )
    table = ReadableTable(
        title=escape(
            f"golden coverage of the day's traffic by {coverage.golden} {coverage.golden_version} "
            f"(nearest golden passage, same language, {t.signal} ≥ {t.value:.3f}: {how}; coverage = "
            "(matched − false) / (true − false))"
        )
    )
    # n is the distinct questions matched, of the day's traces; coverage is the matched share
    # corrected for the matcher's error rates, its day interval from the day's questions, its level
    # interval with the rates' too.
    table.add_column("stratum", "name")
    for column in ("day's traces", "n", "matched", "coverage", "day 95 % CI", "level 95 % CI"):
        table.add_column(column)
    for row in coverage.strata:
        table.add_row(
            escape(row.stratum),
            str(row.day_traces),
            str(row.questions),
            number(row.matched),
            number(row.ratio),
            interval(row.ci_low, row.ci_high, digits=2),
            interval(row.level_ci_low, row.level_ci_high, digits=2),
        )
    console.print(table)
    if coverage.level_note:
        console.print(
            f"  coverage not estimated: {escape(coverage.level_note)} (the matched share counts its errors)"
        )
    for c in coverage.clusters[:3]:
        console.print(
            f"  missed topic {c.cluster_id} ({c.language}, {c.gap_share:.1%} of the day missed, "
            f"coverage {number(c.coverage)}): "
            + escape(" | ".join(r.question for r in c.representatives))
        )
    if coverage.clusters:
        n = len(coverage.clusters)
        console.print(
            f"  {n} topic{'s' if n != 1 else ''} the golden set misses; the largest are queued in the inbox (uncovered-*.csv)"
        )
    if coverage.matcher_misses:
        n = len(coverage.matcher_misses)
        console.print(
            f"  {n} uncovered topic{'s' if n != 1 else ''} matched about as often as covered ones: likely the matcher's misses, not queued"
        )


def judge_noise_line(row) -> str:
    from pipelines.evaluation.outputs.formatting import number

    line = f"judge noise on {row.metric} (test-retest, n = {row.n_retested} items judged twice)"
    if not row.enough:
        return f"{line}: {escape(row.verdict)}"
    line += f": ICC {number(row.icc)}, mean |difference| {number(row.mean_abs_difference)}"
    if row.kappa is not None or row.verdict_agreement is not None:
        line += f", 0/1 form κ {number(row.kappa)}, agreement {number(row.verdict_agreement)}"
    share = "–" if row.noise_share is None else f"{row.noise_share:.0%}"
    return f"{line}; judge share of the variance {share} (N = {row.n_items}); {escape(row.verdict)}"


def judge_trust_line(row) -> str:
    from pipelines.evaluation.outputs.formatting import interval, number

    colour = "[green]" if row.trusted else "[red]" if row.trusted is False else ""
    verdict = f"{colour}{escape(row.verdict)}[/]" if colour else escape(row.verdict)
    line = f"judge on {row.metric} ({escape(row.meaning)}): {verdict}"
    if row.labels:
        line += f"; κ {number(row.kappa)}, accuracy {number(row.accuracy)} on {row.labels} labels"
    if row.sensitivity is not None:
        line += f" (sensitivity {number(row.sensitivity)}, specificity {number(row.specificity)})"
    if row.judge_ci:
        line += f"; judge-only mean {number(row.judge_mean)} {interval(*row.judge_ci)}"
    if row.corrected_ci:
        line += (
            f", corrected for its errors {number(row.corrected_mean)} {interval(*row.corrected_ci)}"
        )
        line += f" ({escape(row.corrected_method)})" if row.corrected_method else ""
    elif row.labels and row.notes:
        line += f"; no corrected mean: {escape(row.notes[-1])}"
    if row.more_labels is not None:
        line += f"; {row.more_labels} more labels for ±{row.half_width}"
    return line


def run_cost_table(cost) -> ReadableTable:
    """The run's model requests per stage and metric (pipelines.evaluation.runs.cost)."""
    table = ReadableTable(
        title=f"cost of this run: {cost.total('requests'):,} requests for {cost.items} items "
        f"({cost.total('cache_hits'):,} from the LLM cache)"
    )
    for column in ("stage", "metric", "model"):
        table.add_column(column, "name")
    for column in (
        "requests",
        "per item",
        "cache hits",
        "prompt tokens",
        "completion tokens",
        "LLM-s",
    ):
        table.add_column(column)
    for row in cost.rows:
        table.add_row(
            row.stage,
            escape(row.metric),
            escape(row.model),
            f"{row.requests:,}",
            f"{row.requests / cost.items:.2f}" if cost.items else "–",
            f"{row.cache_hits:,}",
            f"{row.prompt_tokens:,}",
            f"{row.completion_tokens:,}",
            f"{row.llm_seconds:.1f}",
        )
    return table


def print_estimate(estimate) -> None:
    """A dry run's estimate (pipelines.evaluation.runs.estimate): one row per stage, metric and
    model role."""

    def shown(value: float | None) -> str:
        return "–" if value is None else f"{round(value):,}"

    units = ", ".join(
        f"{n:,} {unit} ({estimate.cached_units.get(unit, 0):,} assumed cached)"
        for unit, n in estimate.units.items()
    )
    console.print(
        f"dry run of {escape(estimate.subject)}: {escape(units)}; nothing sent, nothing written"
    )
    # How each row was estimated follows the table, a line each: the table stays narrow.
    table = ReadableTable()
    for column in ("stage", "metric", "role"):
        table.add_column(column, "name")
    for column in ("requests", "cache hits", "prompt tokens", "completion tokens"):
        table.add_column(column)
    for row in estimate.rows:
        table.add_row(
            row.stage,
            escape(row.metric),
            row.role,
            shown(row.requests),
            shown(row.cache_hits),
            shown(row.prompt_tokens),
            shown(row.completion_tokens),
        )
    table.add_row(
        "total",
        "",
        "",
        *(
            shown(estimate.total(c))
            for c in ("requests", "cache_hits", "prompt_tokens", "completion_tokens")
        ),
    )
    console.print(table)
    for row in estimate.rows:
        console.print(
            f"  {row.stage} · {escape(row.metric)}: {row.units:,} {row.unit}, {escape(row.basis)}"
        )
    history = ", ".join(estimate.history) or "none (no past run sent requests)"
    console.print(f"rates from: {escape(history)}")
    if not estimate.rows:
        console.print(
            "no estimate: no past run to measure requests per item on; run once, then dry-run again"
        )
