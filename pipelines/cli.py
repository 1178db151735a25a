"""`ragwatch ...`: one subcommand per step, plus the demo and the benchmarks."""

from __future__ import annotations

import json
import logging
from collections import Counter
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from pipelines.settings import load_settings

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
    console.print(f"[red]error:[/red] {message}")
    raise typer.Exit(code=1)


@app.callback()
def _setup(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log each step.")] = False) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


@traces_app.command("sample")
def traces_sample(
    day: Annotated[str, typer.Option("--date", help="Day to sample (YYYY-MM-DD, UTC).")],
    rate: Annotated[Optional[float], typer.Option(help="Sample rate in (0, 1]; default from settings.")] = None,
    strata: Annotated[Optional[str], typer.Option(help="Comma-separated strata keys, e.g. app,language,user_feedback.")] = None,
    min_per_stratum: Annotated[Optional[int], typer.Option(help="Floor per stratum so small strata appear.")] = None,
    version: Annotated[bool, typer.Option(help="dvc add + push the published partition.")] = True,
) -> None:
    """Sample, anonymize, validate and publish one day's traces (what the DAG does)."""
    from pipelines.stores.traces import StoreError
    from pipelines.traces.steps import ValidationFailed, run_trace_sampling

    settings = load_settings()
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
    print_sample_summary(result)


def print_sample_summary(result: dict) -> None:
    table = Table(title=f"trace_sampling — {result['day']}", show_header=False)
    table.add_row("traces in the interval", f"{result['population']:,}")
    table.add_row("selected", f"{result['selected']:,}")
    table.add_row("sampled", f"{result['sampled']:,}")
    reasons = ", ".join(f"{k}: {v}" for k, v in result["quarantine_reasons"].items()) or "none"
    table.add_row("quarantined", f"{result['quarantined']:,} ({reasons})")
    table.add_row("PII replaced", ", ".join(f"{k}: {v}" for k, v in result["pii_counts"].items()) or "none")
    table.add_row("validation", result.get("validation", "not run"))
    table.add_row("partition", result.get("partition", "-"))
    if "dvc_md5" in result:
        table.add_row("DVC version", f"md5 {result['dvc_md5']} (workspace commit {result['workspace_rev']})")
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

    anonymizer = Anonymizer(load_settings().pseudonym_key)
    quarantine = quarantine or target.with_suffix(".quarantine.jsonl")
    totals, written, rejected = Counter(), 0, 0
    tmp_out, tmp_bad = target.with_suffix(".partial"), quarantine.with_suffix(".partial")
    with _progress() as bar, source.open(encoding="utf-8") as lines, tmp_out.open("w", encoding="utf-8") as out, \
            tmp_bad.open("w", encoding="utf-8") as bad:  # fmt: skip
        task = bar.add_task(f"anonymizing {source.name}", total=source.stat().st_size)
        for number, line in enumerate(lines, start=1):
            bar.advance(task, len(line.encode("utf-8")))
            if not line.strip():
                continue
            try:
                trace = Trace.model_validate_json(line)
            except ValidationError as exc:
                error = exc.errors()[0]
                reason = f"line {number}: {'.'.join(map(str, error['loc'])) or 'line'}: {error['msg']}"
                text = anonymizer.anonymize_text(line.rstrip("\n"), f"line-{number}", Counter())
                bad.write(json.dumps({"line": number, "reason": reason, "raw": text}, ensure_ascii=False) + "\n")
                console.print(f"[yellow]quarantined[/yellow] {reason}")
                rejected += 1
                continue
            clean, counts = anonymizer.anonymize_trace(trace)
            totals.update(counts)
            out.write(clean.model_dump_json() + "\n")
            written += 1
    tmp_out.replace(target)
    if rejected:
        tmp_bad.replace(quarantine)
    else:
        tmp_bad.unlink()
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

    settings = load_settings()
    with _progress() as bar:
        task = bar.add_task("seeding traces", total=days * per_day)
        try:
            counts = seed_demo_store(settings, days=days, per_day=per_day, seed=seed, replace=replace,
                                     progress=lambda n: bar.update(task, completed=n))  # fmt: skip
        except RuntimeError as exc:
            _fail(str(exc))
    console.print(f"seeded {counts['rows']:,} traces ({counts['broken']} broken on purpose) "
                  f"from {counts['first_day']} to {counts['last_day']} into {counts['store']}")  # fmt: skip


@demo_app.command("summary")
def demo_summary(day: Annotated[Optional[str], typer.Option("--date", help="Default: yesterday (UTC).")] = None) -> None:
    """Print the published trace sample of a day, from its manifest and the workspace."""
    from pipelines.traces.steps import published_manifest
    from pipelines.versioning import git

    settings = load_settings()
    the_day = date.fromisoformat(day) if day else datetime.now(timezone.utc).date() - timedelta(days=1)
    try:
        manifest = published_manifest(settings, the_day)
    except FileNotFoundError as exc:
        _fail(f"{exc}. Run `ragwatch traces sample --date {the_day}` or the trace_sampling DAG first.")
    workspace = settings.resolved_workspace
    partition = f"golden/traces/dt={the_day.isoformat()}"
    dvc_file = workspace / f"{partition}.dvc"
    result = {**manifest, "partition": partition, "validation": "passed (published)"}
    if dvc_file.exists():
        import yaml

        result["dvc_md5"] = yaml.safe_load(dvc_file.read_text())["outs"][0]["md5"]
        result["workspace_rev"] = git("log", "-1", "--format=%h", "--", f"{partition}.dvc", cwd=workspace).strip()
    print_sample_summary(result)


@bench_app.command("anonymize")
def bench_anonymize(
    traces: Annotated[int, typer.Option(help="Generated traces in the labelled set.")] = 2000,
    seed: Annotated[int, typer.Option()] = 11,
) -> None:
    """Throughput and recall of ragwatch's anonymizer against presidio-analyzer's pattern recognizers."""
    from pipelines.bench.anonymize import format_anonymize_bench, run_anonymize_bench

    console.print(format_anonymize_bench(run_anonymize_bench(n_traces=traces, seed=seed)))


if __name__ == "__main__":
    app()
