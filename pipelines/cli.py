"""`ragwatch ...`: one subcommand per step, plus the demo and the benchmarks."""

from __future__ import annotations

import json
import logging
import sys
from collections import Counter
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from pipelines import inputs
from pipelines.redact import redact_text
from pipelines.settings import Settings, SettingsError, load_settings

app = typer.Typer(help="ragwatch: scheduled, honest evaluation of RAG assistants.", no_args_is_help=True)
traces_app = typer.Typer(help="Production traces: sample, anonymize, validate, version.", no_args_is_help=True)
demo_app = typer.Typer(help="The embedded demo: seed data and print summaries.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks measured side by side in one run.", no_args_is_help=True)
app.add_typer(traces_app, name="traces")
app.add_typer(demo_app, name="demo")
app.add_typer(bench_app, name="bench")
console = Console()


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    console=console, transient=False)  # fmt: skip


def _fail(message: str) -> None:
    # Errors quote URLs (stores, gateways, targets): never print the credentials in them. Not wrapped: a path
    # or URL cut by a line break can neither be copied nor searched for.
    console.print(f"[red]error:[/red] {escape(redact_text(message))}", soft_wrap=True)
    raise typer.Exit(code=1)


def _checked(check):
    """A typer callback running one of `pipelines.inputs`' checks: a refused value exits 2 with its reason."""

    def callback(value):
        if value is not None:
            try:
                check(value)
            except ValueError as exc:
                raise typer.BadParameter(str(exc)) from None
        return value

    return callback


def _rate(value: float) -> None:
    if not 0 < value <= 1:
        raise ValueError(f"sample rate {value} is not in (0, 1]")


def _target_url(value: str) -> None:
    from pipelines.evaluation.runs.params import target_url

    target_url(value)


def _run_id(value: str) -> None:
    from pipelines.evaluation.runs.params import offline_run_id

    offline_run_id(value)


def _metrics(value: str) -> None:
    from pipelines.evaluation.runs.params import ALL_JUDGE_METRICS

    unknown = [m for m in value.split(",") if m not in ALL_JUDGE_METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; choose from {ALL_JUDGE_METRICS}")


DateOption = typer.Option("--date", help="YYYY-MM-DD (UTC).", callback=_checked(inputs.day))


def _settings() -> Settings:
    """The settings, or one line per configuration problem naming the variable to set."""
    try:
        return load_settings()
    except SettingsError as exc:
        _fail(f"invalid configuration:\n{exc}")


@app.callback()
def _setup(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each step.")] = False) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for chatty in ("httpx", "great_expectations", "sentence_transformers"):  # one line per request / per step
        logging.getLogger(chatty).setLevel(logging.WARNING)


@traces_app.command("sample")
def traces_sample(
    day: Annotated[str, typer.Option("--date", help="Day to sample (YYYY-MM-DD, UTC).", callback=_checked(inputs.day))],
    rate: Annotated[Optional[float], typer.Option(help="Sample rate in (0, 1]; default from settings.", callback=_checked(_rate))] = None,
    strata: Annotated[Optional[str], typer.Option(help=f"Comma-separated strata keys from {', '.join(inputs.STRATA)}; default from settings.",
                                                  callback=_checked(inputs.strata))] = None,
    min_per_stratum: Annotated[Optional[int], typer.Option(help="Floor per stratum so small strata appear.", min=0)] = None,
    version: Annotated[bool, typer.Option(help="dvc add + push the published partition.")] = True,
) -> None:
    """Sample, anonymize, validate and publish one day's traces (what the DAG does)."""
    from pipelines.stores.traces import StoreError
    from pipelines.traces.steps import run_trace_sampling
    from pipelines.validation import ValidationFailed

    settings = _settings()
    with _progress() as bar:
        task = bar.add_task(f"sampling {day}", total=None)
        try:
            result = run_trace_sampling(
                settings, date.fromisoformat(day), version=version, rate=rate,
                strata=strata.split(",") if strata else None, min_per_stratum=min_per_stratum,
                progress=lambda done, total: bar.update(task, completed=done, total=total),
            )  # fmt: skip
        except (ValidationFailed, StoreError, ValueError) as exc:
            _fail(str(exc))
    print_sample_summary(result.counts, result.validation.describe(), result.partition,
                         result.version.dvc_md5 if result.version else None,
                         result.version.workspace_rev if result.version else None)  # fmt: skip


def print_sample_summary(counts, validation: str, partition: Path, dvc_md5: str | None, workspace_rev: str | None) -> None:
    table = Table(title=f"trace_sampling — {counts.day}", show_header=False)
    table.add_row("traces in the interval", f"{counts.population:,}")
    table.add_row("selected", f"{counts.selected:,}")
    table.add_row("sampled", f"{counts.sampled:,}")
    reasons = ", ".join(f"{k}: {v}" for k, v in counts.quarantine_reasons.items()) or "none"
    table.add_row("quarantined", f"{counts.quarantined:,} ({reasons})")
    table.add_row("PII replaced", ", ".join(f"{k}: {v}" for k, v in counts.pii_counts.items()) or "none")
    table.add_row("validation", validation)
    table.add_row("partition", str(partition))
    if dvc_md5:
        table.add_row("DVC version", f"md5 {dvc_md5} (workspace commit {workspace_rev})")
    console.print(table)


@app.command("anonymize")
def anonymize(
    source: Annotated[Path, typer.Option("--in", exists=True, dir_okay=False, help="JSONL, one Trace per line.")],
    target: Annotated[Path, typer.Option("--out", help="JSONL written with the same fields, anonymized.")],
    quarantine: Annotated[Optional[Path], typer.Option(help="Where unreadable lines go (anonymized, with a reason).")] = None,
) -> None:
    """Anonymize a JSONL file of traces for data teams (same fields out)."""
    from pipelines.privacy.anonymizer import Anonymizer
    from pipelines.records import Trace

    anonymizer = Anonymizer(_settings().pseudonym_key)
    quarantine = quarantine or target.with_suffix(".quarantine.jsonl")
    totals, written, rejected = Counter(), 0, 0
    tmp_out, tmp_bad = target.with_suffix(".partial"), quarantine.with_suffix(".partial")

    def reject(number: int, reason: str, raw: str) -> None:
        nonlocal rejected
        text = anonymizer.anonymize_text(raw, f"line-{number}", Counter())
        bad.write(json.dumps({"line": number, "reason": reason, "raw": text}, ensure_ascii=False) + "\n")
        console.print(f"[yellow]quarantined[/yellow] {escape(reason)}")
        rejected += 1

    try:
        # Bytes in, so that one line in another encoding is that line's problem, not the file's.
        with _progress() as bar, source.open("rb") as lines, tmp_out.open("w", encoding="utf-8") as out, \
                tmp_bad.open("w", encoding="utf-8") as bad:  # fmt: skip
            task = bar.add_task(f"anonymizing {source.name}", total=source.stat().st_size)
            for number, raw_line in enumerate(lines, start=1):
                bar.advance(task, len(raw_line))
                try:
                    line = raw_line.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    reason = f"line {number}: not UTF-8 (byte 0x{raw_line[exc.start]:02x} at column {exc.start + 1})"
                    reject(number, reason, raw_line.decode("utf-8", "replace").rstrip("\r\n"))
                    continue
                if not line.strip():
                    continue
                try:
                    trace = Trace.model_validate_json(line)
                except ValidationError as exc:
                    error = exc.errors()[0]
                    reject(number, f"line {number}: {'.'.join(map(str, error['loc'])) or 'line'}: {error['msg']}", line.rstrip("\r\n"))
                    continue
                clean, counts = anonymizer.anonymize_trace(trace)
                totals.update(counts)
                out.write(clean.model_dump_json() + "\n")
                written += 1
        tmp_out.replace(target)
        if rejected:
            tmp_bad.replace(quarantine)
    finally:  # whatever stopped the run, no half-written file is left behind
        tmp_out.unlink(missing_ok=True)
        tmp_bad.unlink(missing_ok=True)
    console.print(f"{written:,} traces written to {target}; {rejected:,} lines quarantined"
                  + (f" in {quarantine}" if rejected else ""))  # fmt: skip
    console.print("PII replaced: " + (", ".join(f"{k}: {v}" for k, v in sorted(totals.items())) or "none"))


@demo_app.command("seed")
def demo_seed(
    days: Annotated[int, typer.Option(help="Days of traffic, ending yesterday.")] = 14,
    per_day: Annotated[int, typer.Option(help="Traces per day.")] = 300,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same traces).")] = 7,
    replace: Annotated[bool, typer.Option(help="Delete the demo table's rows first.")] = True,
) -> None:
    """Write realistic demo traces (Spanish and English, PII planted, some broken rows) into the store."""
    from pipelines.demo.seed import seed_demo_store

    settings = _settings()
    if settings.trace_source == "otlp":  # `make demo TRACE_SOURCE=otlp`: the same traffic as OTLP/JSON span files
        from pipelines.demo.otlp_traffic import seed_demo_otlp

        try:
            written = seed_demo_otlp(settings, days=days, per_day=per_day, seed=seed, replace=replace)
        except RuntimeError as exc:
            _fail(str(exc))
        console.print(f"wrote {written['traces']:,} traces as OTLP/JSON spans from {written['first_day']} to "
                      f"{written['last_day']} into {written['path']} (left out: {written['left_out']} broken rows no span "
                      "can carry, a timestamp or a context list that is not one)")  # fmt: skip
        return
    with _progress() as bar:
        task = bar.add_task("seeding traces", total=days * per_day)
        try:
            counts = seed_demo_store(settings, days=days, per_day=per_day, seed=seed, replace=replace,
                                     progress=lambda n: bar.update(task, completed=n))  # fmt: skip
        except RuntimeError as exc:
            _fail(str(exc))
    console.print(f"seeded {counts['rows']:,} traces ({counts['broken']} broken on purpose) "
                  f"from {counts['first_day']} to {counts['last_day']} into {counts['store']}")  # fmt: skip


@demo_app.command("drill")
def demo_drill(
    rules: Annotated[Path, typer.Option(help="Prometheus alert rules, read only when no Prometheus is configured.")] = Path("monitoring/rules/ragwatch.rules.yml"),
    wait: Annotated[float, typer.Option(help="Seconds to wait for Prometheus to fire an alert.")] = 60.0,
) -> None:
    """The regression drill: a degraded candidate on the baseline's items, the paired differences, the gate, the alerts."""
    from pipelines.demo.drill import (
        CANDIDATE_FAULTS,
        alerts_that_would_fire,
        prometheus_alerts,
        push_candidate,
        run_drill,
    )  # fmt: skip

    settings = _settings()
    console.print(f"drill: the candidate's offline generator invents and garbles more sentences "
                  f"({', '.join(f'{k}={v:g}' for k, v in CANDIDATE_FAULTS.items())}), same items as the baseline")  # fmt: skip
    try:
        summary, baseline, _ = run_drill(settings)
    except (LookupError, ValueError) as exc:
        _fail(str(exc))
    print_eval_summary(summary)
    console.print(f"baseline report: {baseline.report_path}")
    pushed = push_candidate(settings, summary)
    console.print(f"candidate pushed ({pushed.mode}, group app={escape(summary.target)}): {pushed.destination}")
    if pushed.mode == "pushgateway":
        _print_gauges(settings, suite="offline", app=summary.target)
    if settings.prometheus_url:
        console.print(f"alerts Prometheus evaluates ({settings.prometheus_url}/api/v1/alerts, waiting up to {wait:g} s):")
        alerts = prometheus_alerts(settings.prometheus_url, app=summary.target, wait_s=wait)
        for alert in alerts:
            colour = "red" if alert.state == "firing" else "yellow"
            console.print(f"  - [{colour}]{alert.alert} {alert.state.upper()}[/{colour}] "
                          f"({alert.labels.get('severity', '')}): {escape(alert.summary)}")  # fmt: skip
        if not alerts:
            console.print("  none")
        return
    if not rules.exists():
        console.print(f"[yellow]no Prometheus and no alert rules at {rules}: no alert is evaluated")
        return
    firing = alerts_that_would_fire(summary, rules)
    console.print(f"no Prometheus configured (RAGWATCH_PROMETHEUS_URL): the rules of {rules} these scores would "
                  "fire, recomputed here" if firing else f"no rule of {rules} would fire on these scores")  # fmt: skip
    for alert in firing:
        when = f", after {alert.wait}" if alert.wait else ""
        console.print(f"  - [red]{alert.alert}[/red] ({alert.severity}{when}): {escape(alert.condition)}")


def _print_gauges(settings, *, suite: str, app: str | None = None) -> None:
    """The score gauges (stratum all) that the Pushgateway holds for a group, read back from it."""
    from pipelines.evaluation.outputs.push import read_back

    wanted = {"job": settings.pushgateway_job, "suite": suite, **({"app": app} if app else {})}
    # Without an app, every group of the suite (online evals push one group per app).
    groups = [g for g in read_back(settings.pushgateway_url)
              if all(g["labels"].get(k) == v for k, v in wanted.items()) and (app or "app" not in g["labels"]
                                                                              or suite == "online")]  # fmt: skip
    if not groups:
        console.print(f"[red]the Pushgateway at {settings.pushgateway_url} holds no group {wanted}")
        return
    for group in groups:
        values = {name: s["value"] for name, samples in group["metrics"].items() for s in samples
                  if s["labels"].get("stratum") in ("all", None)}  # fmt: skip
        shown = ", ".join(f"{name.removeprefix('rag_').removesuffix('_score')} {value:.3f}"
                          for name, value in sorted(values.items())
                          if name.endswith("_score") or name == "rag_eval_gate_passed")  # fmt: skip
        console.print(f"read back from the Pushgateway {escape(str(group['labels']))}: {escape(shown)}")


@demo_app.command("label-audit")
def demo_label_audit(
    suite: Annotated[str, typer.Option(help="offline or online.", callback=_checked(inputs.suite))] = "offline",
) -> None:
    """Plant a reviewer's labels on the latest run's judge-audit queue (the judge's verdicts, flipped at known rates),
    then import them as `ragwatch judge labels import` does: the next run reports κ and the judge-corrected mean."""
    from pipelines.demo.audit_labels import FALSE_NO, FALSE_YES, plant_audit_labels
    from pipelines.stores.results import ResultsStore
    from pipelines.workspace import Workspace

    settings = _settings()
    store = ResultsStore.from_settings(settings)
    try:
        run = store.latest_run(suite) if store.exists() else None
    finally:
        store.dispose()
    if run is None:
        _fail(f"no {suite} run yet: run the {suite}_eval DAG or `ragwatch eval {suite}` first")
    try:
        labelled, path = plant_audit_labels(Workspace.from_settings(settings), suite, run.logical_date, run.target)
    except FileNotFoundError as exc:
        _fail(str(exc))
    console.print(f"planted {labelled} labels in {path}: a reviewer who says no to {FALSE_YES:.0%} of the judge's "
                  f"yes verdicts and yes to {FALSE_NO:.0%} of its no verdicts (a real team fills the label column by "
                  "hand); importing them:")  # fmt: skip
    judge_labels_import(path)


@demo_app.command("summary")
def demo_summary(day: Annotated[Optional[str], typer.Option("--date", help="Default: yesterday (UTC).",
                                                            callback=_checked(inputs.day))] = None) -> None:
    """Print the published trace sample of a day, from its manifest and the workspace."""
    from pipelines.traces.steps import published_counts
    from pipelines.versioning import git
    from pipelines.workspace import Workspace

    settings = _settings()
    the_day = date.fromisoformat(day) if day else datetime.now(timezone.utc).date() - timedelta(days=1)
    try:
        counts = published_counts(settings, the_day)
    except FileNotFoundError as exc:
        _fail(f"{exc}. Run `ragwatch traces sample --date {the_day}` or the trace_sampling DAG first.")
    workspace = Workspace.from_settings(settings)
    partition = workspace.traces_partition(the_day).root
    md5 = workspace.dvc_md5(partition)
    rev = git("log", "-1", "--format=%h", "--", str(workspace.dvc_file(workspace.relative(partition))), cwd=workspace.root).strip() if md5 else None
    print_sample_summary(counts, "passed (published)", workspace.relative(partition), md5, rev)


golden_app = typer.Typer(help="Golden datasets: build, import hand-written items, review, show.", no_args_is_help=True)
stage_app = typer.Typer(help="One step of the golden build (what dvc.yaml's stages run).", no_args_is_help=True)
review_app = typer.Typer(help="Human review of a stratified sample.", no_args_is_help=True)
corpus_app = typer.Typer(help="The corpus index in Qdrant.", no_args_is_help=True)
app.add_typer(golden_app, name="golden")
app.add_typer(corpus_app, name="corpus")
golden_app.add_typer(stage_app, name="stage")
golden_app.add_typer(review_app, name="review")
NameOption = Annotated[Optional[str], typer.Option("--name", help="Golden set name; default from params.yaml.",
                                                   callback=_checked(inputs.golden_name))]


def _golden_params(name: str | None = None):
    from pipelines.golden.params import load_golden_params

    try:
        return load_golden_params(_settings(), name=name)
    except ValueError as exc:
        _fail(str(exc))


def _today() -> date:
    return datetime.now(timezone.utc).date()


@corpus_app.command("index")
def corpus_index(
    path: Annotated[Optional[Path], typer.Argument(help="Folder of Markdown/HTML/text files; default: the demo corpus.")] = None,
    rebuild: Annotated[bool, typer.Option(help="Drop the collection and embed every chunk again (a new embedder).")] = False,
) -> None:
    """Chunk a folder and (re-)index it in Qdrant: dense + BM25 sparse vectors, only changed documents."""
    from pipelines.corpus.steps import index_corpus

    settings = _settings()
    report = index_corpus(settings, path or _demo_corpus(settings), rebuild=rebuild)
    console.print(_corpus_table(report))


def _demo_corpus(settings: Settings) -> Path:
    from pipelines.demo.corpus_files import demo_corpus_folder

    return demo_corpus_folder(settings.home)


@corpus_app.command("refresh")
def corpus_refresh(
    path: Annotated[Optional[Path], typer.Argument(help="Folder to re-index; default: the demo corpus.")] = None,
    notify: Annotated[bool, typer.Option(help="Post a `ragwatch_corpus` asset event to Airflow's REST API.")] = False,
) -> None:
    """Re-index, then (with --notify) tell Airflow so the golden set is rebuilt against the new corpus."""
    from pipelines.corpus.steps import index_corpus, notify_refresh

    settings = _settings()
    report = index_corpus(settings, path or _demo_corpus(settings))
    console.print(_corpus_table(report))
    if notify:
        event = notify_refresh(settings, report)
        console.print(f"asset event posted to {settings.airflow_api_url}: {event}")


def _corpus_table(report: dict) -> Table:
    table = Table(title="corpus index", show_header=False)
    for key, value in report.items():
        table.add_row(key.replace("_", " "), str(value))
    return table


@golden_app.command("build")
def golden_build(
    name: NameOption = None,
    day: Annotated[Optional[str], DateOption] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Estimate the requests and tokens from the plan and the "
                                                            "last build; send nothing, write nothing.")] = False,
) -> None:
    """Plan, generate, filter, split, validate and publish a golden set (what the golden_build DAG does)."""
    from pipelines.golden.steps import build_golden

    settings, params = _settings(), _golden_params(name)
    if dry_run:
        from pipelines.golden.estimate import estimate_build

        try:
            estimate = estimate_build(settings, params, logical_date=date.fromisoformat(day) if day else _today())
        except (RuntimeError, ValueError) as exc:
            _fail(str(exc))
        print_estimate(estimate)
        return
    with _progress() as bar:
        task = bar.add_task("generating", total=None)
        try:
            result = build_golden(settings, params, logical_date=date.fromisoformat(day) if day else _today(),
                                  progress=lambda done, total: bar.update(task, completed=done, total=total))  # fmt: skip
        except (RuntimeError, ValueError) as exc:  # ValidationFailed is a RuntimeError
            _fail(str(exc))
    print_golden_summary(result.release.name)


def print_golden_summary(name: str) -> None:
    from pipelines.golden.steps import paths
    from pipelines.stores.partitions import read_manifest

    manifest = read_manifest(paths(_settings(), name).released_manifest)
    funnel = Table(title=f"golden set {name} — filter funnel", show_header=False)
    steps_in_order = ["failed_generation_jobs", "generated", "after_ambiguity_length", "after_closed_book",
                      "after_grounding", "after_near_duplicates", "kept"]  # fmt: skip
    for step in steps_in_order:
        funnel.add_row(step.replace("_", " "), str(manifest["funnel"].get(step, "-")))
    for reason, n in manifest["funnel"].get("rejected_by_reason", {}).items():
        funnel.add_row(f"  rejected: {reason.replace('_', ' ')}", str(n))
    console.print(funnel)
    strata = Table(title=f"golden/{name}/{manifest['version']} — {manifest['items']} items, corpus {manifest['corpus_version']}")
    for column in ("split", "qtype", "language", "items"):
        strata.add_column(column)
    for row in manifest["strata"]:
        strata.add_row(row["split"], row["qtype"], row["language"], str(row["n"]))
    console.print(strata)
    if manifest.get("cost"):
        console.print(_cost_table(manifest["cost"]))
        if budget := manifest["cost"].get("budget"):
            console.print(f"token budget {budget['cap']:,}: {budget['generation_jobs_skipped']:,} generation jobs "
                          f"not run and {budget['candidates_rejected']:,} candidates not checked (rejected) for the "
                          "budget")  # fmt: skip
    console.print(f"generator: {', '.join(manifest['generator_models'])} · judge: {manifest['judge_model']} · "
                  f"stale replaced: {len(manifest['stale'])} · human-rejected: {len(manifest['human_rejected_ids'])}")  # fmt: skip


def _cost_table(cost: dict) -> Table:
    table = Table(title=f"generation cost — {cost['generated']} generated, {cost['kept']} kept "
                        "(requests sent: retries and repairs in, cache hits out)")  # fmt: skip
    for column in ("", "requests", "prompt tokens", "completion tokens"):
        table.add_column(column, justify="right" if column else "left")
    keys = ("requests", "prompt_tokens", "completion_tokens")
    for label, row in (("generator", cost["generator"]), ("judge (filters)", cost["judge"]), ("total", cost["total"]),
                       ("per generated item", cost["per_generated_item"]), ("per kept item", cost["per_kept_item"])):
        table.add_row(label, *("-" if row.get(k) is None else f"{row[k]:,}" for k in keys))
    return table


@golden_app.command("summary")
def golden_summary(name: NameOption = None) -> None:
    """Funnel and strata counts of the published golden set."""
    try:
        print_golden_summary(_golden_params(name).name)
    except FileNotFoundError as exc:
        _fail(f"{exc}. Run `ragwatch golden build` or the golden_build DAG first.")


@stage_app.command("plan")
def stage_plan(name: NameOption = None, day: Annotated[Optional[str], DateOption] = None) -> None:
    from pipelines.golden.steps import plan_golden

    planned = plan_golden(_settings(), _golden_params(name), logical_date=date.fromisoformat(day) if day else _today())
    console.print_json(planned.model_dump_json())


@stage_app.command("generate")
def stage_generate(name: NameOption = None) -> None:
    from pipelines.golden.steps import generate_golden, planned_batches

    settings, params = _settings(), _golden_params(name)
    batches = planned_batches(settings, params)
    with _progress() as bar:
        task = bar.add_task("generating", total=len(batches))
        result = generate_golden(settings, params.name, batches, progress=lambda done, _: bar.update(task, completed=done))
    console.print_json(result.model_dump_json())


@stage_app.command("filter")
def stage_filter(name: NameOption = None) -> None:
    from pipelines.golden.steps import filter_golden

    console.print_json(filter_golden(_settings(), _golden_params(name)).model_dump_json())


@stage_app.command("split")
def stage_split(name: NameOption = None) -> None:
    from pipelines.golden.steps import split_golden

    console.print_json(split_golden(_settings(), _golden_params(name)).model_dump_json())


@stage_app.command("validate")
def stage_validate(name: NameOption = None) -> None:
    from pipelines.golden.steps import validate_golden
    from pipelines.validation import ValidationFailed

    try:
        console.print_json(validate_golden(_settings(), _golden_params(name).name).model_dump_json())
    except ValidationFailed as exc:
        _fail(str(exc))


@golden_app.command("release")
def golden_release(name: NameOption = None) -> None:
    """Promote the validated set, dvc add + push it and tag it `golden/<name>/vN` in the data workspace."""
    from pipelines.golden.steps import release_golden

    console.print_json(release_golden(_settings(), _golden_params(name).name).model_dump_json())


@golden_app.command("repro")
def golden_repro() -> None:
    """Run `dvc repro` in the data workspace (the same steps, driven by its dvc.yaml and params.yaml)."""
    import os
    import subprocess
    import sys

    from pipelines.versioning import ensure_workspace
    from pipelines.workspace import Workspace

    settings = _settings()
    workspace = Workspace.from_settings(settings)
    ensure_workspace(workspace, settings.resolved_dvc_remote)
    env = dict(os.environ, RAGWATCH_HOME=str(settings.home.resolve()), RAGWATCH_WORKSPACE=str(workspace.root))
    raise typer.Exit(subprocess.call([sys.executable, "-m", "dvc", "repro"], cwd=workspace.root, env=env))


workspace_app = typer.Typer(help="The data workspace (git + DVC) itself.", no_args_is_help=True)
app.add_typer(workspace_app, name="workspace")


@workspace_app.command("restore")
def workspace_restore(source: Annotated[Optional[str], typer.Argument(help="The data workspace's git history (a path or git URL) "
                                                            "to clone into RAGWATCH_WORKSPACE first.")] = None) -> None:
    """Fetch every versioned trace partition and golden release of the data workspace from its DVC remote."""
    from pipelines.versioning import VersioningError, restore_workspace
    from pipelines.workspace import Workspace

    settings = _settings()
    try:
        restored = restore_workspace(Workspace.from_settings(settings), settings.resolved_dvc_remote, source)
    except VersioningError as exc:
        _fail(str(exc))
    console.print(f"restored {len(restored)} versioned folders into {settings.resolved_workspace}")


@golden_app.command("import")
def golden_import(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="CSV or JSONL: question, reference_answer, gold_chunk_ids or gold_passages, [split].")],
    name: NameOption = None,
) -> None:
    """Add hand-written items (source=human): never regenerated or filtered; test split unless marked dev."""
    from pipelines.golden.steps import import_human

    result = import_human(_settings(), _golden_params(name).name, file)
    for problem in result.problems:
        console.print(f"[yellow]not imported:[/yellow] {escape(problem)}")
    console.print(f"{result.imported} items imported into {result.path} ({result.total} hand-written items in all). "
                  "They join the set at the next `ragwatch golden build`.")  # fmt: skip
    if result.problems:
        raise typer.Exit(code=2)


@review_app.command("export")
def review_export(
    out: Annotated[Path, typer.Option(help="Folder for the CSV and JSONL files.")] = Path("review"),
    name: NameOption = None,
) -> None:
    """Write a stratified 10–20 % sample of the published set (plus some filter rejects, unmarked) for reviewers."""
    from pipelines.golden.steps import export_review

    params = _golden_params(name)
    result = export_review(_settings(), params.name, out, params.review_fraction)
    console.print(f"{result.rows} items to review ({result.kept} kept, {result.rejected} filter rejects, unmarked): "
                  f"{result.csv} and {result.jsonl}")  # fmt: skip


@review_app.command("import")
def review_import(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The review CSV/JSONL with a decision column.")],
    name: NameOption = None,
) -> None:
    """Apply accept/reject/edit decisions (at the next build) and report agreement with the filters."""
    from pipelines.golden.steps import import_review

    result = import_review(_settings(), _golden_params(name).name, file)
    for problem in result.problems:
        console.print(f"[yellow]skipped:[/yellow] {escape(problem)}")
    console.print(f"{result.decisions} decisions recorded ({result.by_decision}).")
    console.print(f"agreement with the automatic filters: {result.agreement}")


@golden_app.command("show")
def golden_show(
    name: NameOption = None,
    per_stratum: Annotated[int, typer.Option(help="Items shown per (qtype, language) stratum.")] = 2,
    version: Annotated[Optional[str], typer.Option(help="A published version such as v1; default: the latest.",
                                                   callback=_checked(inputs.golden_version))] = None,
) -> None:
    """A readable sample per stratum: question, reference answer and gold chunk excerpts."""
    from pipelines.golden.dataset import load_golden_items

    items = load_golden_items(_settings(), _golden_params(name).name, version)
    shown: Counter = Counter()
    for item in sorted(items, key=lambda i: (i.qtype, i.language, i.item_id)):
        stratum = (item.qtype, item.language)
        if shown[stratum] >= per_stratum:
            continue
        shown[stratum] += 1
        table = Table(title=f"{item.qtype} · {item.language} · {item.variant} · {item.split} · {item.source}",
                      show_header=False, title_justify="left", width=min(console.width, 110))  # fmt: skip
        table.add_row("question", item.question)
        table.add_row("reference", item.reference_answer)
        if item.expected_tool:
            table.add_row("expected call", f"{item.expected_tool} {json.dumps(item.expected_args, ensure_ascii=False)}")
        for cid, text in zip(item.gold_chunk_ids, item.reference_contexts):
            table.add_row(cid, text[:300] + ("…" if len(text) > 300 else ""))
        console.print(table)


@app.command("simulate-llm")
def simulate_llm(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8000,
    latency_s: Annotated[float, typer.Option(help="Seconds each request takes.")] = 0.0,
    capacity: Annotated[int, typer.Option(help="Requests served at once; the rest queue.")] = 16,
    error_rate: Annotated[float, typer.Option(help="Share of requests answered with HTTP 500.")] = 0.0,
    malformed_rate: Annotated[float, typer.Option(help="Share of replies that are not valid JSON.")] = 0.0,
    timeout_rate: Annotated[float, typer.Option(help="Share of requests that never answer in time.")] = 0.0,
) -> None:
    """Serve the OpenAI-compatible API (chat with json_schema and tools, embeddings, models) from the offline backend.

    It answers every prompt ragwatch sends (golden generation, the reference RAG, the ragas judge)."""
    from pipelines.models.simulator import SimulatorKnobs, serve
    from pipelines.prompt_catalog import all_prompts

    serve(all_prompts(), port, SimulatorKnobs(latency_s=latency_s, capacity=capacity, error_rate=error_rate,
                                              malformed_rate=malformed_rate, timeout_rate=timeout_rate))  # fmt: skip


metrics_app = typer.Typer(help="Score your own runs.", no_args_is_help=True)
app.add_typer(metrics_app, name="metrics")


@metrics_app.command("retrieval")
def metrics_retrieval(
    source: Annotated[Path, typer.Option("--in", exists=True, dir_okay=False, help='JSONL of {"query_id", "retrieved_ids", "gold_ids"}.')],
    k: Annotated[str, typer.Option(help="Comma-separated cut-offs.", callback=_checked(inputs.cutoffs))] = "1,3,5,10",
) -> None:
    """recall@k, precision@k and MRR of a run file, as one JSON object.

    Duplicate ids in a retrieved list count once. @k is measured the standard way (trec_eval, ir_measures)
    over every query: a list shorter than k counts its missing ranks as not relevant; `n_short@k` says how
    many queries retrieved fewer than k distinct ids, `mean_depth` how many they retrieved on average."""
    from pipelines.evaluation.metrics.retrieval import score_run_file

    try:
        ks = [int(v) for v in k.split(",") if v.strip()]
        result = score_run_file(source, ks)
    except ValueError as exc:
        _fail(str(exc))
    print(json.dumps(result))
    for cut in sorted(int(name.partition("@")[2]) for name in result if name.startswith("n_short@")):
        if result[f"n_short@{cut}"]:
            print(f"k={cut}: {result[f'n_short@{cut}']} of {result['n']} queries retrieved fewer than {cut} distinct ids; "
                  f"their missing ranks count as not relevant (precision@{cut} below 1 for them)", file=sys.stderr)  # fmt: skip


eval_app = typer.Typer(help="Offline and online evals.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
judge_app = typer.Typer(help="How far the judge can be trusted: people's labels of the daily audit queue.", no_args_is_help=True)
judge_labels_app = typer.Typer(help="Labels of the judge-audit queue (inbox/judge-audit-*.csv).", no_args_is_help=True)
app.add_typer(judge_app, name="judge")
judge_app.add_typer(judge_labels_app, name="labels")


@judge_labels_app.command("import")
def judge_labels_import(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False,
                                         help="A judge-audit CSV/JSONL from the inbox with its label column filled (yes/no).")],
) -> None:
    """Check a labelled judge-audit file and store its labels; every next eval run calibrates its judge on them."""
    from pipelines.evaluation.outputs.formatting import number
    from pipelines.evaluation.outputs.judge_audit import LabelFileError, import_labels
    from pipelines.evaluation.statistics.judge_agreement import trustworthy
    from pipelines.workspace import Workspace

    try:
        result = import_labels(Workspace.from_settings(_settings()), file)
    except LabelFileError as exc:
        _fail(str(exc))
    if not result.imported:
        console.print(f"no row of {escape(file.name)} is labelled yet: fill its label column with yes or no, then import it")
        raise typer.Exit(code=2)
    console.print(f"{result.imported} labels imported into {result.path}.")
    for (suite, metric), agreed in result.agreement.items():
        n = result.labels[(suite, metric)]
        trusted = trustworthy(n, agreed.kappa)
        console.print(f"{suite} {metric}: {n} labels so far, κ {number(agreed.kappa)}, accuracy {number(agreed.accuracy)} "
                      f"(unweighted): " + ("[green]trustworthy" if trusted else "[red]not trustworthy") +
                      "[/]; the next eval run's report weighs them and corrects the judge's mean by its error rates.")  # fmt: skip


def _score_table(title: str, overall) -> Table:
    from pipelines.evaluation.outputs.formatting import interval, number

    table = Table(title=title)
    for column in ("metric", "n", "failed", "mean", "95 % CI", "interval"):
        table.add_column(column, justify="left" if column in ("metric", "interval") else "right")
    for row in overall:
        table.add_row(row.metric, str(row.n), str(row.n_failed), number(row.mean), interval(row.ci_low, row.ci_high),
                      row.ci_method or "–")  # fmt: skip
    return table


def _gate_table(summary, role: str = "baseline", run_id: str | None = None, rows=None) -> Table:
    from pipelines.evaluation.outputs.formatting import interval, number

    table = Table(title=escape(f"paired differences, {summary.target} − {role} {run_id or summary.baseline}"))
    for column in ("metric", "pairs", role, "candidate", "difference", "95 % CI", f"p ({summary.gate_correction})",
                   "catches", "verdict"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("metric", "verdict") else "right")
    for row in summary.gate_rows if rows is None else rows:
        table.add_row(row.metric, str(row.n_pairs), number(row.baseline_mean), number(row.candidate_mean),
                      "–" if row.diff is None else f"{row.diff:+.3f}", interval(row.ci_low, row.ci_high),
                      number(row.p_adjusted), number(row.detectable_drop, 2),
                      _verdict(row))  # fmt: skip
    table.caption = "catches: the smallest drop of the mean this gate fails 90 % of the time at its n"
    return table


def _verdict(row) -> str:
    """pass / FAIL, or why the metric was not gated ("not gated: n = 7 < 10")."""
    return "[red]FAIL" if not row.passed else "[green]pass" if row.gated else escape(row.status)


def print_eval_summary(summary) -> None:
    from pipelines.evaluation.statistics.diagnose import UNCORRECTED

    console.print(_score_table(escape(f"{summary.suite} eval {summary.logical_date} — {summary.target} on "
                                      f"{summary.dataset_version} ({summary.items} items)"), summary.overall))  # fmt: skip
    if summary.generator_model:
        console.print(f"generator: {escape(summary.generator_model)}")
    if summary.gate_rows:
        console.print(_gate_table(summary))
    if summary.reference_rows:
        console.print(_gate_table(summary, "reference", summary.reference, summary.reference_rows))
    colour = "[green]" if summary.gate_passed else "[red]" if summary.gate_passed is False else ""
    console.print(f"gate: {colour}{escape(summary.gate)}")
    if summary.diagnosis:
        correction = (f"{summary.diagnosis_correction} over every band claim" if summary.diagnosis_correction != UNCORRECTED
                      else "no correction: each claim on its own interval")  # fmt: skip
        console.print(f"diagnosis (bands need evidence; {correction}):")
    else:
        console.print("diagnosis: no metric with an operating threshold was scored")
    for line in summary.diagnosis:
        console.print(f"  - {escape(line)}")
    for row in summary.judge_trust:
        console.print(_judge_trust_line(row))
    for row in summary.judge_noise:
        console.print(_judge_noise_line(row))
    if summary.judge_audit_queued:
        console.print(f"{summary.judge_audit_queued} judged items queued for labelling in the inbox (judge-audit-*.csv); "
                      "`ragwatch judge labels import FILE` takes them back")  # fmt: skip
    if summary.cost is not None:
        console.print(_run_cost_table(summary.cost))
        if summary.cost.budget is not None:
            console.print(f"token budget {summary.cost.budget.cap:,}: {summary.cost.skipped_for_budget:,} scores "
                          f"skipped for the budget (reason \"budget\", missing to the gate)")  # fmt: skip
    if summary.coverage is not None:
        _print_coverage(summary.coverage)
    console.print(f"report: {summary.report}")


def _print_coverage(coverage) -> None:
    """The golden set's coverage of the day's traffic per stratum, and the largest topics it misses."""
    from pipelines.evaluation.outputs.formatting import interval, number

    if coverage.status != "ok":
        console.print(f"golden coverage: [red]not measured[/] ({escape(coverage.reason)})")
        return
    t = coverage.threshold
    how = (f"calibrated on {t.positives} golden user questions: true matches {t.tpr:.0%}, false {t.fpr:.0%}, "
           f"AUC {t.auc:.2f}" if t.method == "calibrated" else t.note)  # fmt: skip
    table = Table(title=escape(f"golden coverage of the day's traffic by {coverage.golden} {coverage.golden_version} "
                               f"(nearest golden passage, same language, cosine ≥ {t.value:.3f}: {how})"))  # fmt: skip
    # Fits 80 columns with the stratum whole: n is the distinct questions matched, of the day's traces.
    table.add_column("stratum", no_wrap=True)
    for column in ("day's traces", "n", "covered", "coverage", "95 % CI"):
        table.add_column(column, justify="right")
    for row in coverage.strata:
        table.add_row(escape(row.stratum), str(row.day_traces), str(row.questions), str(row.covered),
                      number(row.ratio), interval(row.ci_low, row.ci_high, digits=2))  # fmt: skip
    console.print(table)
    for c in coverage.clusters[:3]:
        console.print(f"  uncovered topic {c.cluster_id} ({c.language}, {c.share:.1%} of the day): "
                      + escape(" | ".join(r.question for r in c.representatives)))  # fmt: skip
    if coverage.clusters:
        n = len(coverage.clusters)
        console.print(f"  {n} uncovered topic{'s' if n != 1 else ''}; the largest are queued in the inbox (uncovered-*.csv)")


def _judge_noise_line(row) -> str:
    from pipelines.evaluation.outputs.formatting import number

    line = f"judge noise on {row.metric} (test-retest, n = {row.n_retested} items judged twice)"
    if not row.enough:
        return f"{line}: {escape(row.verdict)}"
    line += f": ICC {number(row.icc)}, mean |difference| {number(row.mean_abs_difference)}"
    if row.kappa is not None or row.verdict_agreement is not None:
        line += f", 0/1 form κ {number(row.kappa)}, agreement {number(row.verdict_agreement)}"
    share = "–" if row.noise_share is None else f"{row.noise_share:.0%}"
    return f"{line}; judge share of the variance {share} (N = {row.n_items}); {escape(row.verdict)}"


def _judge_trust_line(row) -> str:
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
        line += f", corrected for its errors {number(row.corrected_mean)} {interval(*row.corrected_ci)}"
    elif row.labels and row.notes:
        line += f"; no corrected mean: {escape(row.notes[-1])}"
    if row.more_labels is not None:
        line += f"; {row.more_labels} more labels for ±{row.half_width}"
    return line


def _run_cost_table(cost) -> Table:
    """The run's model requests per stage and metric (pipelines.evaluation.runs.cost)."""
    table = Table(title=f"cost of this run: {cost.total('requests'):,} requests for {cost.items} items "
                        f"({cost.total('cache_hits'):,} from the LLM cache)")  # fmt: skip
    for column in ("stage", "metric", "model", "requests", "per item", "cache hits", "prompt tokens",
                   "completion tokens", "LLM-s"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("stage", "metric", "model") else "right")
    for row in cost.rows:
        table.add_row(row.stage, escape(row.metric), escape(row.model), f"{row.requests:,}",
                      f"{row.requests / cost.items:.2f}" if cost.items else "–", f"{row.cache_hits:,}",
                      f"{row.prompt_tokens:,}", f"{row.completion_tokens:,}", f"{row.llm_seconds:.1f}")  # fmt: skip
    return table


def print_estimate(estimate) -> None:
    """A dry run's estimate (pipelines.evaluation.runs.estimate): one row per stage, metric and model role."""

    def shown(value: float | None) -> str:
        return "–" if value is None else f"{round(value):,}"

    units = ", ".join(f"{n:,} {unit} ({estimate.cached_units.get(unit, 0):,} assumed cached)"
                      for unit, n in estimate.units.items())  # fmt: skip
    console.print(f"dry run of {escape(estimate.subject)}: {escape(units)}; nothing sent, nothing written")
    # Narrow enough for an 80-column terminal: how each row was estimated follows the table, a line each.
    table = Table()
    for column in ("stage", "metric", "role", "requests", "cache hits", "prompt tokens", "completion tokens"):
        table.add_column(column, justify="left" if column in ("stage", "metric", "role") else "right")
    for row in estimate.rows:
        table.add_row(row.stage, escape(row.metric), row.role, shown(row.requests), shown(row.cache_hits),
                      shown(row.prompt_tokens), shown(row.completion_tokens))  # fmt: skip
    table.add_row("total", "", "", *(shown(estimate.total(c)) for c in ("requests", "cache_hits", "prompt_tokens",
                                                                        "completion_tokens")))  # fmt: skip
    console.print(table)
    for row in estimate.rows:
        console.print(f"  {row.stage} · {escape(row.metric)}: {row.units:,} {row.unit}, {escape(row.basis)}")
    history = ", ".join(estimate.history) or "none (no past run sent requests)"
    console.print(f"rates from: {escape(history)}")
    if not estimate.rows:
        console.print("no estimate: no past run to measure requests per item on; run once, then dry-run again")


@eval_app.command("offline")
def eval_offline(
    day: Annotated[Optional[str], typer.Option("--date", help="Logical date of the run (default: today, UTC).",
                                               callback=_checked(inputs.day))] = None,
    golden_version: Annotated[Optional[str], typer.Option(help="e.g. v2; default: the latest published.",
                                                          callback=_checked(inputs.golden_version))] = None,
    target_url: Annotated[Optional[str], typer.Option(help="Your RAG service (see README; credentials go in RAGWATCH_TARGET_HEADERS); "
                                                      "default: the reference RAG.", callback=_checked(_target_url))] = None,
    target_name: Annotated[Optional[str], typer.Option(help="Name of the target in runs, reports and gauges; default: from the URL.",
                                                       callback=_checked(inputs.target_name))] = None,
    k: Annotated[str, typer.Option(help="Cut-offs for recall@k / precision@k.", callback=_checked(inputs.cutoffs))] = "1,3,5,10",
    metrics: Annotated[Optional[str], typer.Option(help="Comma-separated judge metrics; default: all.", callback=_checked(_metrics))] = None,
    limit: Annotated[Optional[int], typer.Option(help="Evaluate a stable subset of this many items, stratified by question type.", min=1)] = None,
    fail_on_gate: Annotated[bool, typer.Option(help="Exit non-zero when the regression gate fails.")] = False,
    retrieval_k: Annotated[Optional[int], typer.Option(help="Chunks the reference RAG hands its generator (default 5).", min=1)] = None,
    baseline: Annotated[Optional[str], typer.Option("--baseline-run", "--baseline", callback=_checked(_run_id),
                                                    help="Gate against this run id instead of the target's previous "
                                                         "accepted run.")] = None,
    reference: Annotated[Optional[str], typer.Option("--reference-run", callback=_checked(_run_id),
                                                     help="Also gate against this run id instead of the last pinned "
                                                          "release (or the first accepted run on the golden version).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Estimate the requests and tokens per stage from the "
                                                            "last runs; send nothing, write nothing.")] = False,
) -> None:
    """The weekly offline eval without Airflow: target, judge, CIs, gate, report, push."""
    from pipelines.evaluation.runs.offline import run_offline_eval
    from pipelines.evaluation.runs.params import eval_params

    settings = _settings()
    try:
        params = eval_params(settings, golden_version=golden_version, target_url=target_url, target_name=target_name,
                             limit=limit, k=inputs.cutoffs(k), metrics=metrics.split(",") if metrics else None,
                             fail_on_gate=fail_on_gate, retrieval_k=retrieval_k, baseline_run=baseline,
                             reference_run=reference)  # fmt: skip
    except ValueError as exc:
        _fail(str(exc))
    if dry_run:
        from pipelines.evaluation.runs.estimate import estimate_offline

        try:
            estimate = estimate_offline(settings, params, logical_date=date.fromisoformat(day) if day else _today())
        except (FileNotFoundError, ValueError) as exc:
            _fail(f"{exc}")
        print_estimate(estimate)
        return
    with _progress() as bar:
        task = bar.add_task("judging", total=None)
        try:
            # The gate is enforced below, after the summary is printed: a failing gate shows its reasons.
            summary, _ = run_offline_eval(settings, params.model_copy(update={"fail_on_gate": False}),
                                          logical_date=date.fromisoformat(day) if day else _today(),
                                          progress=lambda done, total: bar.update(task, completed=done, total=total))  # fmt: skip
        except (FileNotFoundError, ValueError, RuntimeError) as exc:
            _fail(f"{exc}")
    print_eval_summary(summary)
    if fail_on_gate and summary.gate_passed is False:
        _fail(f"the regression gate failed (report: {summary.report})")


@eval_app.command("online")
def eval_online(
    day: Annotated[Optional[str], typer.Option("--date", help="Day whose sampled traces to score (default: yesterday, UTC).",
                                               callback=_checked(inputs.day))] = None,
    push: Annotated[bool, typer.Option(help="Push the scores to the Pushgateway (or its textfile).")] = True,
    max_traces: Annotated[Optional[int], typer.Option(help="Traces judged at most, stratified by app and language "
                                                           "(default: RAGWATCH_ONLINE_MAX_TRACES, 2000).", min=1)] = None,
    noise_share: Annotated[Optional[float], typer.Option(help="Share of the judged traces that also get noise ΔF "
                                                              "(default: RAGWATCH_ONLINE_NOISE_SHARE, 0.25).",
                                                         min=0.0, max=1.0)] = None,
    target_half_width: Annotated[Optional[float], typer.Option(help="Judge each stratum on as many traces as "
                                                                    "faithfulness' 95 % interval needs to be about ± "
                                                                    "this, from the last runs' spread (--max-traces "
                                                                    "still caps).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Estimate the requests and tokens per stage from the "
                                                            "last runs; send nothing, write nothing.")] = False,
) -> None:
    """The daily online eval without Airflow: judge a budget of the day's sampled traces, noise ΔF, tool-call validity."""
    from pipelines.evaluation.outputs.formatting import number
    from pipelines.evaluation.runs.online import run_online_eval
    from pipelines.evaluation.runs.params import online_params
    from pipelines.workspace import Workspace

    settings = _settings()
    the_day = date.fromisoformat(day) if day else _today() - timedelta(days=1)
    try:
        params = online_params(settings, max_traces=max_traces, noise_share=noise_share,
                               target_half_width=target_half_width)  # fmt: skip
    except ValidationError as exc:
        _fail("; ".join(f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}" for e in exc.errors(include_url=False)))
    if dry_run:
        from pipelines.evaluation.runs.estimate import estimate_online

        try:
            estimate = estimate_online(settings, the_day, params)
        except FileNotFoundError as exc:
            _fail(str(exc))
        print_estimate(estimate)
        return
    with _progress() as bar:
        task = bar.add_task("judging", total=None)
        try:
            summary = run_online_eval(settings, the_day, params, push=push,
                                      progress=lambda done, total: bar.update(task, completed=done, total=total))  # fmt: skip
        except FileNotFoundError as exc:
            _fail(str(exc))
    print_eval_summary(summary)
    table = Table(title=escape(f"judged {summary.items} of the day's {summary.day_traces} sampled traces "
                               f"(budget {params.max_traces})"))  # fmt: skip
    for column in ("stratum", "day's traces", "judged", "noise ΔF", "faithfulness n", "95 % CI ±"):
        table.add_column(column, justify="left" if column == "stratum" else "right")
    for row in summary.judged_strata:
        table.add_row(escape(row.stratum), str(row.day_traces), str(row.judged), str(row.noise), str(row.faithfulness_n),
                      number(row.faithfulness_half_width))  # fmt: skip
    console.print(table)
    inbox = Workspace.from_settings(settings).review_candidates(the_day)
    console.print(f"{summary.review_candidates} lowest-scoring traces queued for golden review in {inbox} "
                  "(fill in the reference answer and gold passages, then `ragwatch golden import` it)")  # fmt: skip


@eval_app.command("cost")
def eval_cost(
    suite: Annotated[str, typer.Option(help="offline or online.", callback=_checked(inputs.suite))] = "online",
    target: Annotated[Optional[str], typer.Option(help="Target name (default: production online, reference-rag "
                                                       "offline).", callback=_checked(inputs.target_name))] = None,
    weeks: Annotated[int, typer.Option(help="ISO weeks to show, up to the one of --date.", min=1, max=104)] = 8,
    day: Annotated[Optional[str], typer.Option("--date", help="The last week's day (default: today, UTC).",
                                               callback=_checked(inputs.day))] = None,
) -> None:
    """What a suite's runs cost week by week: requests and tokens per run and per item, from the results DB."""
    from pipelines.evaluation.outputs.cost_trend import weekly_cost
    from pipelines.stores.results import ResultsStore

    def shown(value: float | None) -> str:
        return "–" if value is None else f"{value:,.1f}"

    name = target or ("production" if suite == "online" else "reference-rag")
    store = ResultsStore.from_settings(_settings())
    try:
        until = date.fromisoformat(day) if day else _today()
        trend = weekly_cost(store, suite, name, until=until, weeks=weeks) if store.exists() else []
    finally:
        store.dispose()
    table = Table(title=escape(f"{suite} runs of {name}, by ISO week: requests and prompt + completion tokens "
                               f"(as the servers reported them)"))  # fmt: skip
    table.add_column("week of", no_wrap=True, min_width=10)
    for column in ("runs", "requests", "per run", "tokens", "per run", "per item", "cache hits"):
        table.add_column(column, justify="right")
    for week in trend:
        runs = f"{week.runs}" + (f" (+{week.unrecorded_runs} unrecorded)" if week.unrecorded_runs else "")
        if not week.runs:
            table.add_row(str(week.week), runs, *[""] * 6)
            continue
        table.add_row(str(week.week), runs, f"{week.requests:,}", shown(week.per_run("requests")), f"{week.tokens:,}",
                      shown(week.per_run("tokens")), shown(week.per_item("tokens")), f"{week.cache_hits:,}")
    console.print(table)


@eval_app.command("summary")
def eval_summary(suite: Annotated[str, typer.Option(help="offline or online.", callback=_checked(inputs.suite))] = "offline") -> None:
    """The latest run of a suite from the results DB: scores with CIs, gate, diagnosis, report path."""
    from pipelines.evaluation.outputs.summary import latest_summary
    from pipelines.stores.results import ResultsStoreError

    try:
        print_eval_summary(latest_summary(_settings(), suite))
    except (LookupError, ResultsStoreError) as exc:
        _fail(str(exc))


@eval_app.command("pin")
def eval_pin(
    run: Annotated[str, typer.Argument(help="The run id, e.g. offline/2026-11-30/reference-rag.", callback=_checked(_run_id))],
    remove: Annotated[bool, typer.Option("--remove", help="Unpin: the run is no longer a release.")] = False,
    reference: Annotated[bool, typer.Option("--reference", help="Also move the reference here: later runs are gated "
                                                                "against this release (after an improvement).")] = False,
) -> None:
    """Pin an offline run as a release. The first release of a golden version is the reference every later run of
    its target is also gated against (slow drift fails, even when every release is pinned); `--reference` moves the
    reference to this release, and so does pinning a run whose own gate failed (the change was meant, and it is an
    accepted baseline). A run that measured no gated metric cannot be pinned."""
    from pipelines.evaluation.statistics.gate.gated_metrics import GATED_METRICS
    from pipelines.stores.results import ResultsStore, ResultsStoreError

    settings = _settings()
    store = ResultsStore.from_settings(settings)
    try:
        if not store.exists():
            _fail("no results DB yet: run `ragwatch eval offline` first")
        store.create()  # adds the release columns to a results DB of an older version
        pinned = store.pin(run, pinned=not remove, reference=reference and not remove, metrics=GATED_METRICS,
                           min_ok=settings.gate_min_pairs)  # fmt: skip
    except (LookupError, ValueError, ResultsStoreError) as exc:
        _fail(str(exc))
    finally:
        store.dispose()
    if remove:
        console.print(f"{escape(pinned.run_id)} is no longer a release")
    elif reference or pinned.gate_passed is False:
        gate = "" if pinned.gate_passed is not False else " (its own gate failed: pinning accepts the change)"
        console.print(f"{escape(pinned.run_id)} on {escape(pinned.dataset_version)} is the release later runs of "
                      f"{escape(pinned.target)} are gated against{gate}")  # fmt: skip
    else:
        console.print(f"{escape(pinned.run_id)} on {escape(pinned.dataset_version)} is a release of "
                      f"{escape(pinned.target)}; later runs are gated against the first release on "
                      f"{escape(pinned.dataset_version)} since the reference last moved (`--reference` moves it "
                      f"here)")  # fmt: skip


@eval_app.command("gauges")
def eval_gauges(
    suite: Annotated[str, typer.Option(help="offline or online")] = "offline",
    app_name: Annotated[Optional[str], typer.Option("--app", help="The group's app label, if any.")] = None,
) -> None:
    """Read a suite's gauges back from the Pushgateway (RAGWATCH_PUSHGATEWAY_URL)."""
    settings = _settings()
    if not settings.pushgateway_url:
        console.print(f"no Pushgateway configured (RAGWATCH_PUSHGATEWAY_URL): gauges are in textfiles under "
                      f"{settings.home / 'metrics'}")  # fmt: skip
        return
    _print_gauges(settings, suite=suite, app=app_name)


@eval_app.command("compare")
def eval_compare(
    a: Annotated[str, typer.Option("--a", help="Arm A, e.g. 'k=5,mode=hybrid' or 'url=http://old/rag'.")],
    b: Annotated[str, typer.Option("--b", help="Arm B, e.g. 'k=3,mode=dense' or 'url=http://new/rag'.")],
    limit: Annotated[Optional[int], typer.Option(help="A stable subset of this many items, stratified by question type.", min=1)] = None,
    metrics: Annotated[Optional[str], typer.Option(help="Comma-separated judge metrics; default: all.", callback=_checked(_metrics))] = None,
) -> None:
    """A/B: both configurations on the same items; paired differences B − A per metric and stratum with CIs."""
    from pipelines.evaluation.runs.compare import compare
    from pipelines.evaluation.runs.params import eval_params

    settings = _settings()
    base = eval_params(settings, limit=limit, metrics=metrics.split(",") if metrics else None)
    try:
        rows = compare(settings, base, a, b, logical_date=_today())
    except ValueError as exc:
        _fail(str(exc))
    table = Table(title=escape(f"A = {a}   B = {b}   (paired on the same items)"))
    for column in ("metric", "stratum", "pairs", "A", "B", "B − A", "95 % CI", "p (adjusted)", ""):
        table.add_column(column)
    for r in rows:
        ci = "—" if r["ci_low"] is None else f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        p_adjusted = "—" if r["p_adjusted"] is None else f"{r['p_adjusted']:.3f}"
        table.add_row(r["metric"], escape(r["stratum"]), str(r["n_pairs"]), f"{r['a']:.3f}", f"{r['b']:.3f}",
                      f"{r['diff']:+.3f}", ci, p_adjusted, "significant" if r["significant"] else "")  # fmt: skip
    console.print(table)
    if rows:
        methods = ", ".join(dict.fromkeys(r["ci_method"] for r in rows if r["ci_method"]))  # 0/1 and other scores differ
        console.print(f"CI: {methods}; p: paired sign-flip test, {rows[0]['correction']}-adjusted over "
                      f"{len(rows)} rows (false discovery rate 0.05)")  # fmt: skip


@bench_app.command("anonymize")
def bench_anonymize(
    traces: Annotated[int, typer.Option(help="Generated traces in the labelled set.")] = 2000,
    clean_traces: Annotated[int, typer.Option(min=2, help="Clean traces cut from this machine's documentation "
                                                            "(half per language).")] = 1000,
    seed: Annotated[int, typer.Option()] = 11,
) -> None:
    """Throughput and recall of ragwatch's anonymizer against presidio-analyzer's pattern recognizers, and
    how much clean technical text it touches or quarantines."""
    from pipelines.bench.anonymize import format_anonymize_bench, run_anonymize_bench

    console.print(format_anonymize_bench(run_anonymize_bench(n_traces=traces, seed=seed, clean_traces=clean_traces)))


@bench_app.command("index")
def bench_index(
    chunks: Annotated[int, typer.Option(min=1, help="Chunks in the generated corpus.")] = 10_000,
    items: Annotated[int, typer.Option(min=1, help="Hand-written items for `golden import`.")] = 1_000,
    embedder: Annotated[str, typer.Option(help="local (the model) or hashing (a stand-in: all but the model).")] = "local",
    rule_sample: Annotated[int, typer.Option(min=1, help="Passages also matched by the one-by-one rule.")] = 50,
    seed: Annotated[int, typer.Option()] = 11,
) -> None:
    """Chunks per second for parsing, embedding and upserting; unchanged re-index; golden import at scale."""
    if embedder not in ("local", "hashing"):
        _fail(f"--embedder is local or hashing, not {escape(embedder)!r}")
    from pipelines.bench.index import format_index_bench, run_index_bench

    result = run_index_bench(chunks=chunks, items=items, seed=seed, embedder=embedder, rule_sample=rule_sample,
                             progress=console.print)  # fmt: skip
    console.print(format_index_bench(result))


@bench_app.command("eval")
def bench_eval(
    items: Annotated[int, typer.Option(help="Generated golden-like items.")] = 200,
    latency: Annotated[float, typer.Option(help="Simulator latency per request, seconds.")] = 0.2,
    capacity: Annotated[int, typer.Option(help="Requests the simulator serves at once.")] = 16,
    seed: Annotated[int, typer.Option()] = 5,
    ragas_embeddings: Annotated[str, typer.Option(help="ragas' embeddings: simulator or local.")] = "simulator",
) -> None:
    """Wall time, requests and efficiency of ragwatch's judge (and its cached rerun) against ragas.evaluate()."""
    if ragas_embeddings not in ("simulator", "local"):
        _fail(f"--ragas-embeddings is simulator or local, not {escape(ragas_embeddings)!r}")
    from pipelines.bench.eval import format_eval_bench, run_eval_bench

    result = run_eval_bench(n_items=items, latency_s=latency, capacity=capacity, seed=seed,
                            ragas_embeddings=ragas_embeddings)  # fmt: skip
    console.print(format_eval_bench(result))


@bench_app.command("diagnose")
def bench_diagnose(
    reps: Annotated[int, typer.Option(min=1, help="Simulated runs per scenario and score model.")] = 2000,
    items: Annotated[int, typer.Option(min=2, help="Items per stratum.")] = 30,
    seed: Annotated[int, typer.Option()] = 17,
) -> None:
    """How often the diagnosis flags a stratum 15 points worse, and a healthy one (12 strata × 30 items)."""
    from pipelines.bench.diagnose_power import format_diagnose_bench, run_diagnose_bench

    console.print(format_diagnose_bench(run_diagnose_bench(reps=reps, seed=seed, items=items)))


@bench_app.command("judge-shift")
def bench_judge_shift(
    reps: Annotated[int, typer.Option(min=1, help="Simulated runs per scenario.")] = 1000,
    judged: Annotated[int, typer.Option(min=2, help="Judged items per run (N).")] = 2000,
    per_verdict: Annotated[int, typer.Option(min=1, help="Labels per verdict on each of the 5 earlier runs.")] = 15,
    seed: Annotated[int, typer.Option()] = 29,
) -> None:
    """Coverage and width of the judge-only, human-only, previous PPI and corrected intervals when quality moves."""
    from pipelines.bench.judge_shift import format_judge_shift_bench, run_judge_shift_bench

    typer.echo(format_judge_shift_bench(run_judge_shift_bench(reps=reps, seed=seed, judged=judged,
                                                              per_verdict=per_verdict)))  # fmt: skip


@bench_app.command("gate")
def bench_gate(
    reps: Annotated[int, typer.Option(min=1, help="Simulated baseline/candidate pairs per scenario and n.")] = 400,
    sizes: Annotated[str, typer.Option(help="Eval sizes n, comma-separated.")] = "30,60,100",
    draws: Annotated[Optional[int], typer.Option(min=100, help="Null draws of the gate's family test (default: the gate's, 10,000).")] = None,
    seed: Annotated[int, typer.Option()] = 17,
    targets: Annotated[bool, typer.Option(help="Instead: per metric, the power for a 10-point drop at n = 100 and "
                                               "200, for 15 points at n = 100, and the n reaching 90 % (sizes "
                                               "100–400; --sizes is not used).")] = False,
    detectable: Annotated[bool, typer.Option(help="Instead: per n of --sizes and metric, the drop the gate states "
                                                  "it catches 90 % of the time, and the power measured there.")] = False,
    whole: Annotated[bool, typer.Option(help="Instead: the whole gate of a run (baseline and reference, chosen by "
                                             "the gate from a SQLite results DB): false alarms and power per n of "
                                             "--sizes, --reps targets per cell.")] = False,
    chain: Annotated[bool, typer.Option(help="Instead: --reps chains of --weeks weekly runs (n = the first of "
                                             "--sizes), each gated and saved: false alarms per week and over the "
                                             "chain.")] = False,
    weeks: Annotated[int, typer.Option(min=2, help="--chain: weekly runs per chain.")] = 10,
    pin_releases: Annotated[bool, typer.Option(help="--chain: pin every run that passed as a release.")] = False,
    drift: Annotated[float, typer.Option(min=0.0, help="--chain: faithfulness lost every week (0: unchanged).")] = 0.0,
) -> None:
    """False alarms, power and interval coverage of the regression gate, simulated with the gate itself."""
    from pipelines.bench.gate_power import (
        format_detectable_bench,
        format_gate_bench,
        format_target_bench,
        run_detectable_bench,
        run_gate_bench,
        run_target_bench,
    )  # fmt: skip

    progress = lambda line: console.print(escape(line))  # noqa: E731
    if targets:
        typer.echo(format_target_bench(run_target_bench(reps=reps, draws=draws, seed=seed, progress=progress)))
        return
    try:
        ns = [int(n) for n in sizes.split(",")]
    except ValueError:
        _fail(f"--sizes is a comma-separated list of integers, not {escape(sizes)!r}")
    if whole or chain:
        from pipelines.bench.run_gate_power import (
            format_chain_bench,
            format_whole_gate_bench,
            run_chain_bench,
            run_whole_gate_bench,
        )  # fmt: skip

        if chain:
            typer.echo(format_chain_bench(run_chain_bench(n=ns[0], weeks=weeks, chains=reps, pin_releases=pin_releases,
                                                          drift=drift, seed=seed, progress=progress)))  # fmt: skip
        else:
            typer.echo(format_whole_gate_bench(run_whole_gate_bench(sizes=ns, reps=reps, seed=seed,
                                                                    progress=progress)))  # fmt: skip
        return
    if detectable:
        typer.echo(format_detectable_bench(run_detectable_bench(sizes=ns, reps=reps, draws=draws, seed=seed,
                                                                progress=progress)))  # fmt: skip
        return
    result = run_gate_bench(sizes=ns, reps=reps, draws=draws, seed=seed, progress=progress)
    typer.echo(format_gate_bench(result))


@bench_app.command("sample")
def bench_sample(
    rows: Annotated[int, typer.Option(min=1, help="Traces in the synthetic day.")] = 100_000,
    store: Annotated[str, typer.Option(help="sqlite, or postgres (a throwaway cluster unless --store-url).")] = "sqlite",
    store_url: Annotated[Optional[str], typer.Option(help="A PostgreSQL database the bench may fill (one table it creates and drops).")] = None,
    rate: Annotated[float, typer.Option(min=0.0001, max=1.0, help="Sample rate.")] = 0.05,
    workers: Annotated[int, typer.Option(min=0, help="Anonymizing processes; 0 = one per CPU.")] = 0,
    version: Annotated[bool, typer.Option(help="Run the DVC version task too.")] = True,
    one_process: Annotated[bool, typer.Option(help="Every step in one process, as `ragwatch traces sample` runs "
                                                   "them, instead of one process per DAG task.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Wall time, rows/s and peak RSS of the whole trace-sampling step on a synthetic day of N traces."""
    if store not in ("sqlite", "postgres"):
        _fail(f"--store is sqlite or postgres, not {escape(store)!r}")
    if store_url and store != "postgres":
        _fail("--store-url needs --store postgres")
    from pipelines.bench.sample import format_sample_bench, run_sample_bench

    result = run_sample_bench(rows, store=store, url=store_url, rate=rate, workers=workers, version=version,
                              one_process=one_process)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        console.print(format_sample_bench(result))


@bench_app.command("otlp")
def bench_otlp(
    traces: Annotated[int, typer.Option(min=1, help="Traces in the synthetic day of OTLP/JSON span files.")] = 100_000,
    rate: Annotated[float, typer.Option(min=0.0001, max=1.0, help="Sample rate.")] = 0.05,
) -> None:
    """Peak RSS and wall time of the sampling's select and shard tasks reading a day of OTLP/JSON span files."""
    from pipelines.bench.otlp_day import bench_otlp_day

    typer.echo(json.dumps(bench_otlp_day(traces, rate=rate), indent=1))


@bench_app.command("online")
def bench_online(
    rows: Annotated[int, typer.Option(min=1, help="Sampled traces in the synthetic day's partition.")] = 1_000,
    latency: Annotated[float, typer.Option(min=0.0, help="Simulator latency per request, seconds.")] = 1.0,
    capacity: Annotated[int, typer.Option(min=1, help="Requests the simulator serves at once.")] = 16,
    max_traces: Annotated[Optional[int], typer.Option(min=1, help="Traces judged (RAGWATCH_ONLINE_MAX_TRACES); "
                                                                  "default: the eval's.")] = None,  # fmt: skip
    noise_share: Annotated[Optional[float], typer.Option(min=0.0, max=1.0, help="Share of the judged traces given noise "
                                                         "ΔF (RAGWATCH_ONLINE_NOISE_SHARE); default: the eval's.")] = None,  # fmt: skip
    seed: Annotated[int, typer.Option()] = 11,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Requests (sent vs expected), wall vs ideal and peak RSS of the online eval on a day of N sampled traces."""
    from pipelines.bench.online import format_online_bench, recorded_equals_served, run_online_bench

    try:
        result = run_online_bench(rows, latency_s=latency, capacity=capacity, max_traces=max_traces,
                                  noise_share=noise_share, seed=seed, progress=lambda line: console.print(escape(line)))  # fmt: skip
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        typer.echo(format_online_bench(result))
    if not recorded_equals_served(result):
        _fail(f"the run recorded {result['recorded_requests']:,} requests ({result['recorded_by_model']}) where the "
              f"simulator served {result['requests']:,} ({result['by_model']}): the usage accounting missed some")


@bench_app.command("plan")
def bench_plan(
    rows: Annotated[int, typer.Option(min=1, help="Sampled traces in each day's partition.")] = 1_000_000,
    days: Annotated[int, typer.Option(min=1, help="Days the plan reads (the golden params' trace_days).")] = 14,
    pick: Annotated[int, typer.Option(min=0, help="Trace questions the plan takes.")] = 100,
    previous_rows: Annotated[int, typer.Option(min=1, help="Rows per day the previous loader (every row a dict) "
                                                           "is measured on, then scaled.")] = 100_000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Peak RSS and wall time of the golden plan's read of trace questions over DAYS days of ROWS traces,
    beside the previous loader."""
    from pipelines.bench.plan import format_plan_bench, run_plan_bench

    result = run_plan_bench(rows, days=days, n=pick, previous_rows=previous_rows)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        console.print(format_plan_bench(result))


if __name__ == "__main__":
    app()
