"""`ragwatch demo ...`: the embedded demo's data, its regression drill and its summaries."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from pipelines.cli.judge import judge_labels_import
from pipelines.cli.options import (
    checked,
    current_settings,
    today,
)
from pipelines.cli.render.console import console, fail, progress_bar
from pipelines.cli.render.evals import print_eval_summary
from pipelines.cli.render.gauges import print_gauges
from pipelines.cli.render.traces import print_sample_summary
from pipelines.core import inputs

app = typer.Typer(help="The embedded demo: seed data and print summaries.", no_args_is_help=True)


@app.command("seed")
def demo_seed(
    days: Annotated[int, typer.Option(help="Days of traffic, ending yesterday.")] = 14,
    per_day: Annotated[int, typer.Option(help="Traces per day.")] = 300,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same traces).")] = 7,
    replace: Annotated[bool, typer.Option(help="Delete the demo table's rows first.")] = True,
) -> None:
    """Write realistic demo traces (Spanish and English, PII planted, some broken rows) into the
    store."""
    from ragwatch_harness.demo.seed import seed_demo_store

    settings = current_settings()
    if (
        settings.trace_source == "otlp"
    ):  # `make demo TRACE_SOURCE=otlp`: the same traffic as OTLP/JSON span files
        from ragwatch_harness.demo.otlp_traffic import seed_demo_otlp

        try:
            written = seed_demo_otlp(
                settings, days=days, per_day=per_day, seed=seed, replace=replace
            )
        except RuntimeError as exc:
            fail(str(exc))
        console.print(
            f"wrote {written['traces']:,} traces as OTLP/JSON spans from {written['first_day']} to "
            f"{written['last_day']} into {written['path']} (left out: {written['left_out']} broken rows no span "
            "can carry, a timestamp or a context list that is not one)"
        )
        return
    with progress_bar() as bar:
        task = bar.add_task("seeding traces", total=days * per_day)
        try:
            counts = seed_demo_store(
                settings,
                days=days,
                per_day=per_day,
                seed=seed,
                replace=replace,
                progress=lambda n: bar.update(task, completed=n),
            )
        except RuntimeError as exc:
            fail(str(exc))
    console.print(
        f"seeded {counts['rows']:,} traces ({counts['broken']} broken on purpose) "
        f"from {counts['first_day']} to {counts['last_day']} into {counts['store']}"
    )


@app.command("corpus")
def demo_corpus(
    rebuild: Annotated[
        bool, typer.Option(help="Drop the collection and embed every chunk again (a new embedder).")
    ] = False,
) -> None:
    """Write the demo corpus as Markdown files under RAGWATCH_HOME/corpus (Python's docs and Spanish
    guides), then index that folder as `ragwatch corpus index` does."""
    from pipelines.cli.render.golden import corpus_table
    from pipelines.corpus.steps import index_corpus
    from ragwatch_harness.demo.corpus_files import demo_corpus_folder

    settings = current_settings()
    console.print(
        corpus_table(index_corpus(settings, demo_corpus_folder(settings.home), rebuild=rebuild))
    )


@app.command("reviewed")
def demo_reviewed(
    out: Annotated[Path, typer.Argument(help="The JSONL file to write.")],
) -> None:
    """Write the reviewed user questions a team would import (`ragwatch golden import`): one English
    and one Spanish question on each passage the demo's users ask about, with that passage."""
    from ragwatch_harness.demo.reviewed import reviewed_rows, write_reviewed

    write_reviewed(out)
    console.print(f"wrote {len(reviewed_rows())} reviewed user questions to {out}")


@app.command("drill")
def demo_drill(
    rules: Annotated[
        Path,
        typer.Option(help="Prometheus alert rules, read only when no Prometheus is configured."),
    ] = Path("monitoring/rules/ragwatch.rules.yml"),
    wait: Annotated[
        float, typer.Option(help="Seconds to wait for Prometheus to fire an alert.")
    ] = 60.0,
) -> None:
    """The regression drill: a degraded candidate on the baseline's items, the paired differences,
    the gate, the alerts."""
    from ragwatch_harness.demo.drill import (
        CANDIDATE_FAULTS,
        alerts_that_would_fire,
        prometheus_alerts,
        push_candidate,
        run_drill,
    )
    from ragwatch_harness.demo.recap import DrillAlert, DrillAlerts, save_drill_alerts

    settings = current_settings()
    console.print(
        f"drill: the candidate's offline generator invents and garbles more sentences "
        f"({', '.join(f'{k}={v:g}' for k, v in CANDIDATE_FAULTS.items())}), same items as the baseline"
    )
    try:
        summary, baseline, _ = run_drill(settings)
    except (LookupError, ValueError) as exc:
        fail(str(exc))
    print_eval_summary(summary)
    console.print(f"baseline report: {baseline.report_path}")
    pushed = push_candidate(settings, summary)
    console.print(
        f"candidate pushed ({pushed.mode}, group app={escape(summary.target)}): {pushed.destination}"
    )
    if pushed.mode == "pushgateway":
        print_gauges(settings, suite="offline", app=summary.target)
    if settings.prometheus_url:
        console.print(
            f"alerts Prometheus evaluates ({settings.prometheus_url}/api/v1/alerts, waiting up to {wait:g} s):"
        )
        alerts = prometheus_alerts(settings.prometheus_url, app=summary.target, wait_s=wait)
        for alert in alerts:
            colour = "red" if alert.state == "firing" else "yellow"
            console.print(
                f"  - [{colour}]{alert.alert} {alert.state.upper()}[/{colour}] "
                f"({alert.labels.get('severity', '')}): {escape(alert.summary)}"
            )
        if not alerts:
            console.print("  none")
        save_drill_alerts(
            settings,
            DrillAlerts(
                f"Prometheus at {settings.prometheus_url}, stopped with the demo",
                [DrillAlert(a.alert, a.state, a.summary) for a in alerts],
            ),
        )
        return
    if not rules.exists():
        console.print(f"[yellow]no Prometheus and no alert rules at {rules}: no alert is evaluated")
        return
    firing = alerts_that_would_fire(summary, rules)
    console.print(
        f"no Prometheus configured (RAGWATCH_PROMETHEUS_URL): the rules of {rules} these scores would "
        "fire, recomputed here"
        if firing
        else f"no rule of {rules} would fire on these scores"
    )
    for alert in firing:
        when = f", after {alert.wait}" if alert.wait else ""
        console.print(
            f"  - [red]{alert.alert}[/red] ({alert.severity}{when}): {escape(alert.condition)}"
        )
    save_drill_alerts(
        settings,
        DrillAlerts(
            f"recomputed from {rules} (no Prometheus)",
            [DrillAlert(a.alert, "would fire", a.condition) for a in firing],
        ),
    )


@app.command("label-audit")
def demo_label_audit(
    suite: Annotated[
        str, typer.Option(help="offline or online.", callback=checked(inputs.suite))
    ] = "offline",
) -> None:
    """Plant a reviewer's labels on the latest run's judge-audit queue (the judge's verdicts,
    flipped at known rates), then import them as `ragwatch judge labels import` does: the next run
    reports κ and the judge-corrected mean."""
    from pipelines.core.workspace import Workspace
    from pipelines.stores.results import ResultsStore
    from ragwatch_harness.demo.audit_labels import FALSE_NO, FALSE_YES, plant_audit_labels

    settings = current_settings()
    store = ResultsStore.from_settings(settings)
    try:
        run = store.latest_run(suite) if store.exists() else None
    finally:
        store.dispose()
    if run is None:
        fail(f"no {suite} run yet: run the {suite}_eval DAG or `ragwatch eval {suite}` first")
    try:
        labelled, path = plant_audit_labels(
            Workspace.from_settings(settings), suite, run.logical_date, run.target
        )
    except FileNotFoundError as exc:
        fail(str(exc))
    console.print(
        f"planted {labelled} labels in {path}: a reviewer who says no to {FALSE_YES:.0%} of the judge's "
        f"yes verdicts and yes to {FALSE_NO:.0%} of its no verdicts (a real team fills the label column by "
        "hand); importing them:"
    )
    judge_labels_import(path)


@app.command("summary")
def demo_summary(
    day: Annotated[
        str | None,
        typer.Option("--date", help="Default: yesterday (UTC).", callback=checked(inputs.day)),
    ] = None,
) -> None:
    """Print the published trace sample of a day, from its manifest and the workspace."""
    from pipelines.core.versioning import git
    from pipelines.core.workspace import StaleVersion, Workspace
    from pipelines.traces.steps import published_counts

    settings = current_settings()
    the_day = date.fromisoformat(day) if day else datetime.now(UTC).date() - timedelta(days=1)
    try:
        counts = published_counts(settings, the_day)
    except FileNotFoundError as exc:
        fail(
            f"{exc}. Run `ragwatch traces sample --date {the_day}` or the trace_sampling DAG first."
        )
    workspace = Workspace.from_settings(settings)
    partition = workspace.traces_partition(the_day).root
    try:
        md5 = workspace.traces_version(the_day)
    except StaleVersion as exc:
        fail(str(exc))
    rev = (
        git(
            "log",
            "-1",
            "--format=%h",
            "--",
            str(workspace.dvc_file(workspace.relative(partition))),
            cwd=workspace.root,
        ).strip()
        if md5
        else None
    )
    print_sample_summary(counts, "passed (published)", workspace.relative(partition), md5, rev)


@app.command("recap")
def demo_recap(
    day: Annotated[
        str | None,
        typer.Option(
            "--date",
            help="The day the online eval scored; default: yesterday (UTC).",
            callback=checked(inputs.day),
        ),
    ] = None,
    log: Annotated[
        str | None, typer.Option(help="Where the demo wrote every table, to point to.")
    ] = None,
) -> None:
    """One screen on what the demo did: the steps, the drill's verdict and why, coverage, judge
    trust, cost, and where to click. `make demo` ends with it; the full tables are in its log and
    the reports."""
    from ragwatch_harness.cli.render.recap import recap_lines
    from ragwatch_harness.demo.recap import demo_recap as gather

    the_day = date.fromisoformat(day) if day else today() - timedelta(days=1)
    for line in recap_lines(gather(current_settings(), the_day, log=log)):
        console.print(line, soft_wrap=True, highlight=False)
