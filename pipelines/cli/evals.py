"""`ragwatch eval ...`: offline and online evals, their cost, releases, gauges and A/B
comparisons."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape

from pipelines.cli.options import (
    DryRunOption,
    JudgeMetricsOption,
    SubsetOption,
    checked,
    current_settings,
    date_option,
    target_name_option,
    today,
    valid_run_id,
    valid_target_url,
)
from pipelines.cli.render.console import console, fail, progress_of
from pipelines.cli.render.evals import print_estimate, print_eval_summary
from pipelines.cli.render.gauges import print_gauges
from pipelines.cli.render.tables import ReadableTable
from pipelines.core import inputs

app = typer.Typer(help="Offline and online evals.", no_args_is_help=True)


@app.command("offline")
def eval_offline(
    day: Annotated[
        str | None, date_option("Logical date of the run (default: today, UTC).")
    ] = None,
    golden_version: Annotated[
        str | None,
        typer.Option(
            help="e.g. v2; default: the latest published.", callback=checked(inputs.golden_version)
        ),
    ] = None,
    target_url: Annotated[
        str | None,
        typer.Option(
            help="Your RAG service (docs/how-to/real-services.md; credentials go in RAGWATCH_TARGET_HEADERS); "
            "default: the reference RAG.",
            callback=checked(valid_target_url),
        ),
    ] = None,
    target_name: Annotated[
        str | None,
        target_name_option(
            "Name of the target in runs, reports and gauges; default: from the URL."
        ),
    ] = None,
    k: Annotated[
        str,
        typer.Option(help="Cut-offs for recall@k / precision@k.", callback=checked(inputs.cutoffs)),
    ] = "1,3,5,10",
    metrics: JudgeMetricsOption = None,
    limit: SubsetOption = None,
    fail_on_gate: Annotated[
        bool, typer.Option(help="Exit non-zero when the regression gate fails.")
    ] = False,
    retrieval_k: Annotated[
        int | None,
        typer.Option(help="Chunks the reference RAG hands its generator (default 5).", min=1),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline-run",
            "--baseline",
            callback=checked(valid_run_id),
            help="Gate against this run id instead of the target's previous run.",
        ),
    ] = None,
    reference: Annotated[
        str | None,
        typer.Option(
            "--reference-run",
            callback=checked(valid_run_id),
            help="Also gate against this run id instead of the last pinned "
            "release (or the first accepted run on the golden version).",
        ),
    ] = None,
    dry_run: DryRunOption = False,
) -> None:
    """The weekly offline eval without Airflow: target, judge, CIs, gate, report, push."""
    from pipelines.evaluation.runs.offline import run_offline_eval
    from pipelines.evaluation.runs.params import eval_params

    settings = current_settings()
    try:
        params = eval_params(
            settings,
            golden_version=golden_version,
            target_url=target_url,
            target_name=target_name,
            limit=limit,
            k=inputs.cutoffs(k),
            metrics=metrics.split(",") if metrics else None,
            fail_on_gate=fail_on_gate,
            retrieval_k=retrieval_k,
            baseline_run=baseline,
            reference_run=reference,
        )
    except ValueError as exc:
        fail(str(exc))
    if dry_run:
        from pipelines.evaluation.runs.estimate import estimate_offline

        try:
            estimate = estimate_offline(
                settings, params, logical_date=date.fromisoformat(day) if day else today()
            )
        except (FileNotFoundError, ValueError) as exc:
            fail(f"{exc}")
        print_estimate(estimate)
        return
    with progress_of("judging") as progress:
        try:
            # The gate is enforced below, after the summary is printed: a failing gate shows its
            # reasons.
            summary, _ = run_offline_eval(
                settings,
                params.model_copy(update={"fail_on_gate": False}),
                logical_date=date.fromisoformat(day) if day else today(),
                progress=progress,
            )
        except (FileNotFoundError, ValueError, RuntimeError) as exc:
            fail(f"{exc}")
    print_eval_summary(summary)
    if fail_on_gate and summary.gate_passed is False:
        fail(f"the regression gate failed (report: {summary.report})")


@app.command("online")
def eval_online(
    day: Annotated[
        str | None, date_option("Day whose sampled traces to score (default: yesterday, UTC).")
    ] = None,
    push: Annotated[
        bool, typer.Option(help="Push the scores to the Pushgateway (or its textfile).")
    ] = True,
    max_traces: Annotated[
        int | None,
        typer.Option(
            help="Traces judged at most, stratified by app and language (default: RAGWATCH_ONLINE_MAX_TRACES, 2000).",
            min=1,
        ),
    ] = None,
    noise_share: Annotated[
        float | None,
        typer.Option(
            help="Share of the judged traces that also get noise ΔF (default: RAGWATCH_ONLINE_NOISE_SHARE, 0.25).",
            min=0.0,
            max=1.0,
        ),
    ] = None,
    target_half_width: Annotated[
        float | None,
        typer.Option(
            help="Judge each stratum on as many traces as "
            "faithfulness' 95 % interval needs to be about ± "
            "this, from the last runs' spread (--max-traces "
            "still caps)."
        ),
    ] = None,
    dry_run: DryRunOption = False,
) -> None:
    """The daily online eval without Airflow: judge a budget of the day's sampled traces, noise ΔF,
    tool-call validity."""
    from pipelines.core.workspace import StaleVersion, Workspace
    from pipelines.evaluation.outputs.formatting import number
    from pipelines.evaluation.runs.online import run_online_eval
    from pipelines.evaluation.runs.params import online_params

    settings = current_settings()
    the_day = date.fromisoformat(day) if day else today() - timedelta(days=1)
    try:
        params = online_params(
            settings,
            max_traces=max_traces,
            noise_share=noise_share,
            target_half_width=target_half_width,
        )
    except ValidationError as exc:
        fail(
            "; ".join(
                f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
        )
    if dry_run:
        from pipelines.evaluation.runs.estimate import estimate_online

        try:
            estimate = estimate_online(settings, the_day, params)
        except FileNotFoundError as exc:
            fail(str(exc))
        print_estimate(estimate)
        return
    with progress_of("judging") as progress:
        try:
            summary = run_online_eval(settings, the_day, params, push=push, progress=progress)
        except (FileNotFoundError, StaleVersion) as exc:
            fail(str(exc))
    print_eval_summary(summary)
    table = ReadableTable(
        title=escape(
            f"judged {summary.items} of the day's {summary.day_traces} sampled traces (budget {params.max_traces})"
        )
    )
    table.add_column("stratum", "name")
    for column in ("day's traces", "judged", "noise ΔF", "faithfulness n", "95 % CI ±"):
        table.add_column(column)
    for row in summary.judged_strata:
        table.add_row(
            escape(row.stratum),
            str(row.day_traces),
            str(row.judged),
            str(row.noise),
            str(row.faithfulness_n),
            number(row.faithfulness_half_width),
        )
    console.print(table)
    inbox = Workspace.from_settings(settings).review_candidates(the_day)
    console.print(
        f"{summary.review_candidates} lowest-scoring traces queued for golden review in {inbox} "
        "(fill in the reference answer and gold passages, then `ragwatch golden import` it)"
    )


@app.command("cost")
def eval_cost(
    suite: Annotated[
        str, typer.Option(help="offline or online.", callback=checked(inputs.suite))
    ] = "online",
    target: Annotated[
        str | None,
        target_name_option("Target name (default: production online, reference-rag offline)."),
    ] = None,
    weeks: Annotated[
        int, typer.Option(help="ISO weeks to show, up to the one of --date.", min=1, max=104)
    ] = 8,
    day: Annotated[str | None, date_option("The last week's day (default: today, UTC).")] = None,
) -> None:
    """What a suite's runs cost week by week: requests and tokens per run and per item, from the
    results DB."""
    from pipelines.evaluation.outputs.cost_trend import weekly_cost
    from pipelines.stores.results import ResultsStore

    def shown(value: float | None) -> str:
        return "–" if value is None else f"{value:,.1f}"

    name = target or ("production" if suite == "online" else "reference-rag")
    store = ResultsStore.from_settings(current_settings())
    try:
        until = date.fromisoformat(day) if day else today()
        trend = weekly_cost(store, suite, name, until=until, weeks=weeks) if store.exists() else []
    finally:
        store.dispose()
    table = ReadableTable(
        title=escape(
            f"{suite} runs of {name}, by ISO week: requests and prompt + completion tokens "
            f"(as the servers reported them)"
        )
    )
    table.add_column("week of", "name")
    table.add_column("runs", "text")  # "3 (+1 unrecorded)" may fold
    for column in ("requests", "per run", "tokens", "per run", "per item", "cache hits"):
        table.add_column(column)
    for week in trend:
        runs = f"{week.runs}" + (
            f" (+{week.unrecorded_runs} unrecorded)" if week.unrecorded_runs else ""
        )
        if not week.runs:
            table.add_row(str(week.week), runs, *[""] * 6)
            continue
        table.add_row(
            str(week.week),
            runs,
            f"{week.requests:,}",
            shown(week.per_run("requests")),
            f"{week.tokens:,}",
            shown(week.per_run("tokens")),
            shown(week.per_item("tokens")),
            f"{week.cache_hits:,}",
        )
    console.print(table)


@app.command("summary")
def eval_summary(
    suite: Annotated[
        str, typer.Option(help="offline or online.", callback=checked(inputs.suite))
    ] = "offline",
) -> None:
    """The latest run of a suite from the results DB: scores with CIs, gate, diagnosis, report
    path."""
    from pipelines.evaluation.outputs.summary import latest_summary
    from pipelines.stores.results import ResultsStoreError

    try:
        print_eval_summary(latest_summary(current_settings(), suite))
    except (LookupError, ResultsStoreError) as exc:
        fail(str(exc))


@app.command("pin")
def eval_pin(
    run: Annotated[
        str,
        typer.Argument(
            help="The run id, e.g. offline/2026-11-30/reference-rag.",
            callback=checked(valid_run_id),
        ),
    ],
    remove: Annotated[
        bool, typer.Option("--remove", help="Unpin: the run is no longer a release.")
    ] = False,
    reference: Annotated[
        bool,
        typer.Option(
            "--reference",
            help="Also move the reference here: later runs are gated against this release (after an improvement).",
        ),
    ] = False,
    partial: Annotated[
        bool,
        typer.Option(
            "--partial",
            help="Pin a run that lacks a gated metric (the judge off): it becomes the reference of what it measured "
            "only; each metric it lacks keeps the earliest release that measured it.",
        ),
    ] = False,
) -> None:
    """Pin an offline run as a release. The first release of a golden set is the reference every
    later run of its target is also gated against (slow drift fails, even when every release is
    pinned); `--reference` moves the reference to this release, and so does pinning a run whose own
    gate failed (the change was meant). A run that measured no gated metric cannot be pinned; one
    that lacks a gated metric a full eval scores (or another run of its target measured) only with
    `--partial`."""
    from pipelines.evaluation.statistics.gate.gated_metrics import FULL_EVAL_METRICS, GATED_METRICS
    from pipelines.stores.results import ResultsStore, ResultsStoreError

    settings = current_settings()
    store = ResultsStore.from_settings(settings)
    try:
        if not store.exists():
            fail("no results DB yet: run `ragwatch eval offline` first")
        store.create()  # adds the release columns to a results DB of an older version
        pinned = store.pin(
            run,
            pinned=not remove,
            reference=reference and not remove,
            metrics=GATED_METRICS,
            min_ok=settings.gate_min_pairs,
            expected=FULL_EVAL_METRICS,
            partial=partial,
        )
    except (LookupError, ValueError, ResultsStoreError) as exc:
        fail(str(exc))
    finally:
        store.dispose()
    if remove:
        console.print(f"{escape(pinned.run_id)} is no longer a release")
    elif reference or pinned.gate_passed is False:
        gate = (
            ""
            if pinned.gate_passed is not False
            else " (its own gate failed: pinning accepts the change)"
        )
        console.print(
            f"{escape(pinned.run_id)} on {escape(pinned.dataset_version)} is the release later runs of "
            f"{escape(pinned.target)} are gated against{gate}"
        )
    else:
        console.print(
            f"{escape(pinned.run_id)} on {escape(pinned.dataset_version)} is a release of "
            f"{escape(pinned.target)}; later runs are gated, metric by metric, against the first release that "
            f"measured it since the reference last moved (`--reference` moves it here)"
        )


@app.command("gauges")
def eval_gauges(
    suite: Annotated[str, typer.Option(help="offline or online")] = "offline",
    app_name: Annotated[
        str | None, typer.Option("--app", help="The group's app label, if any.")
    ] = None,
) -> None:
    """Read a suite's gauges back from the Pushgateway (RAGWATCH_PUSHGATEWAY_URL)."""
    settings = current_settings()
    if not settings.pushgateway_url:
        console.print(
            f"no Pushgateway configured (RAGWATCH_PUSHGATEWAY_URL): gauges are in textfiles under "
            f"{settings.home / 'metrics'}"
        )
        return
    print_gauges(settings, suite=suite, app=app_name)


@app.command("push")
def eval_push(
    run: Annotated[
        str,
        typer.Option("--run", help="The saved run's id, e.g. offline/2026-03-02/reference-rag."),
    ],
    app_name: Annotated[
        str | None, typer.Option("--app", help="The group's app label, if any.")
    ] = None,
) -> None:
    """Push a saved run's gauges again from the results DB, e.g. after the Pushgateway was down
    during its eval."""
    from pipelines.evaluation.outputs.push import push_stored_run
    from pipelines.stores.results import ResultsStoreError

    try:
        pushed = push_stored_run(current_settings(), run, app=app_name)
    except (LookupError, RuntimeError, ResultsStoreError) as exc:
        fail(str(exc))
    if pushed.skipped:
        console.print(f"not pushed: {escape(pushed.skipped)}")
    else:
        console.print(
            f"{pushed.samples} samples pushed ({pushed.mode}): {escape(pushed.destination or '')}"
        )


@app.command("compare")
def eval_compare(
    a: Annotated[
        str, typer.Option("--a", help="Arm A, e.g. 'k=5,mode=hybrid' or 'url=http://old/rag'.")
    ],
    b: Annotated[
        str, typer.Option("--b", help="Arm B, e.g. 'k=3,mode=dense' or 'url=http://new/rag'.")
    ],
    limit: SubsetOption = None,
    metrics: JudgeMetricsOption = None,
) -> None:
    """A/B: both configurations on the same items; paired differences B − A per metric and stratum
    with CIs."""
    from pipelines.evaluation.runs.compare import compare
    from pipelines.evaluation.runs.params import eval_params

    settings = current_settings()
    base = eval_params(settings, limit=limit, metrics=metrics.split(",") if metrics else None)
    try:
        rows = compare(settings, base, a, b, logical_date=today())
    except ValueError as exc:
        fail(str(exc))
    table = ReadableTable(title=escape(f"A = {a}   B = {b}   (paired on the same items)"))
    for column in ("metric", "stratum"):
        table.add_column(column, "name")
    for column in ("pairs", "A", "B", "B − A", "95 % CI", "p (adjusted)"):
        table.add_column(column)
    table.add_column("", "text")
    for r in rows:
        ci = "—" if r["ci_low"] is None else f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        p_adjusted = "—" if r["p_adjusted"] is None else f"{r['p_adjusted']:.3f}"
        table.add_row(
            r["metric"],
            escape(r["stratum"]),
            str(r["n_pairs"]),
            f"{r['a']:.3f}",
            f"{r['b']:.3f}",
            f"{r['diff']:+.3f}",
            ci,
            p_adjusted,
            "significant" if r["significant"] else "",
        )
    console.print(table)
    if rows:
        methods = ", ".join(
            dict.fromkeys(r["ci_method"] for r in rows if r["ci_method"])
        )  # 0/1 and other scores differ
        console.print(
            f"CI: {methods}; p: paired sign-flip test, {rows[0]['correction']}-adjusted over "
            f"{len(rows)} rows (false discovery rate 0.05)"
        )
