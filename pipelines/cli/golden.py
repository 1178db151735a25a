"""`ragwatch golden ...`: golden sets built, imported, reviewed, shown; each build stage on its
own."""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from pipelines.cli.options import (
    DateOption,
    NameOption,
    checked,
    current_settings,
    golden_params,
    today,
)
from pipelines.cli.render.console import console, fail, progress_bar, progress_of
from pipelines.cli.render.evals import print_estimate
from pipelines.cli.render.golden import print_golden_summary
from pipelines.cli.render.tables import ReadableTable
from pipelines.core import inputs

app = typer.Typer(
    help="Golden datasets: build, import hand-written items, review, show.", no_args_is_help=True
)
stage_app = typer.Typer(
    help="One step of the golden build (what dvc.yaml's stages run).", no_args_is_help=True
)
review_app = typer.Typer(help="Human review of a stratified sample.", no_args_is_help=True)
app.add_typer(stage_app, name="stage")
app.add_typer(review_app, name="review")


@app.command("build")
def golden_build(
    name: NameOption = None,
    day: Annotated[str | None, DateOption] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Estimate the requests and tokens from the plan and the last build; send nothing, write nothing.",
        ),
    ] = False,
) -> None:
    """Plan, generate, filter, split, validate and publish a golden set (what the golden_build DAG
    does)."""
    from pipelines.golden.steps import build_golden

    settings, params = current_settings(), golden_params(name)
    logical_date = date.fromisoformat(day) if day else today()
    if dry_run:
        from pipelines.golden.estimate import estimate_build

        try:
            estimate = estimate_build(settings, params, logical_date=logical_date)
        except (RuntimeError, ValueError) as exc:
            fail(str(exc))
        print_estimate(estimate)
        return
    with progress_of("generating") as progress:
        try:
            result = build_golden(settings, params, logical_date=logical_date, progress=progress)
        except (RuntimeError, ValueError) as exc:  # ValidationFailed is a RuntimeError
            fail(str(exc))
    print_golden_summary(result.release.name)


@app.command("summary")
def golden_summary(name: NameOption = None) -> None:
    """Funnel and strata counts of the published golden set."""
    try:
        print_golden_summary(golden_params(name).name)
    except FileNotFoundError as exc:
        fail(f"{exc}. Run `ragwatch golden build` or the golden_build DAG first.")


@stage_app.command("plan")
def stage_plan(name: NameOption = None, day: Annotated[str | None, DateOption] = None) -> None:
    """Stage 1 of dvc.yaml: which chunks and trace questions the build uses, and its batches."""
    from pipelines.golden.steps import plan_golden

    planned = plan_golden(
        current_settings(),
        golden_params(name),
        logical_date=date.fromisoformat(day) if day else today(),
    )
    console.print_json(planned.model_dump_json())


@stage_app.command("generate")
def stage_generate(name: NameOption = None) -> None:
    """Stage 2: the planned batches' question/answer candidates from the generator model (cached,
    budgeted)."""
    from pipelines.golden.steps import generate_golden, planned_batches

    settings, params = current_settings(), golden_params(name)
    batches = planned_batches(settings, params)
    with progress_bar() as bar:
        task = bar.add_task("generating", total=len(batches))
        result = generate_golden(
            settings,
            params.name,
            batches,
            progress=lambda done, _: bar.update(task, completed=done),
        )
    console.print_json(result.model_dump_json())


@stage_app.command("filter")
def stage_filter(name: NameOption = None) -> None:
    """Stage 3: reject candidates that would make the golden set lie (rules, then model checks),
    each with its reason."""
    from pipelines.golden.steps import filter_golden

    console.print_json(filter_golden(current_settings(), golden_params(name)).model_dump_json())


@stage_app.command("split")
def stage_split(name: NameOption = None) -> None:
    """Stage 4: assemble the dataset: dev/test by stable hash, the released test split kept, stale
    items replaced."""
    from pipelines.golden.steps import split_golden

    console.print_json(split_golden(current_settings(), golden_params(name)).model_dump_json())


@stage_app.command("validate")
def stage_validate(name: NameOption = None) -> None:
    """Stage 5: the Great Expectations suite over the staged set; a failure publishes nothing."""
    from pipelines.core.validation import ValidationFailed
    from pipelines.golden.steps import validate_golden

    try:
        console.print_json(
            validate_golden(current_settings(), golden_params(name).name).model_dump_json()
        )
    except ValidationFailed as exc:
        fail(str(exc))


@app.command("release")
def golden_release(name: NameOption = None) -> None:
    """Promote the validated set, dvc add + push it and tag it `golden/<name>/vN` in the data
    workspace."""
    from pipelines.golden.steps import release_golden

    console.print_json(
        release_golden(current_settings(), golden_params(name).name).model_dump_json()
    )


@app.command("repro")
def golden_repro() -> None:
    """Run `dvc repro` in the data workspace (the same steps, driven by its dvc.yaml and
    params.yaml)."""
    import os
    import subprocess

    from pipelines.core.versioning import ensure_workspace
    from pipelines.core.workspace import Workspace

    settings = current_settings()
    workspace = Workspace.from_settings(settings)
    ensure_workspace(workspace, settings.resolved_dvc_remote)
    env = dict(
        os.environ,
        RAGWATCH_HOME=str(settings.home.resolve()),
        RAGWATCH_WORKSPACE=str(workspace.root),
    )
    raise typer.Exit(
        subprocess.call([sys.executable, "-m", "dvc", "repro"], cwd=workspace.root, env=env)
    )


@app.command("import")
def golden_import(
    file: Annotated[
        Path,
        typer.Argument(
            exists=True,
            dir_okay=False,
            help="CSV or JSONL: question, reference_answer, gold_chunk_ids or gold_passages, [split].",
        ),
    ],
    name: NameOption = None,
) -> None:
    """Add hand-written items (source=human): never regenerated or filtered; test split unless
    marked dev."""
    from pipelines.golden.steps import import_human

    result = import_human(current_settings(), golden_params(name).name, file)
    for problem in result.problems:
        console.print(f"[yellow]not imported:[/yellow] {escape(problem)}")
    console.print(
        f"{result.imported} items imported into {result.path} ({result.total} hand-written items in all). "
        "They join the set at the next `ragwatch golden build`."
    )
    if result.problems:
        raise typer.Exit(code=2)


@review_app.command("export")
def review_export(
    out: Annotated[Path, typer.Option(help="Folder for the CSV and JSONL files.")] = Path("review"),
    name: NameOption = None,
) -> None:
    """Write a stratified 10–20 % sample of the published set (plus some filter rejects, unmarked)
    for reviewers."""
    from pipelines.golden.steps import export_review

    params = golden_params(name)
    result = export_review(current_settings(), params.name, out, params.review_fraction)
    console.print(
        f"{result.rows} items to review ({result.kept} kept, {result.rejected} filter rejects, unmarked): "
        f"{result.csv} and {result.jsonl}"
    )


@review_app.command("import")
def review_import(
    file: Annotated[
        Path,
        typer.Argument(
            exists=True, dir_okay=False, help="The review CSV/JSONL with a decision column."
        ),
    ],
    name: NameOption = None,
) -> None:
    """Apply accept/reject/edit decisions (at the next build) and report agreement with the
    filters."""
    from pipelines.golden.steps import import_review

    result = import_review(current_settings(), golden_params(name).name, file)
    for problem in result.problems:
        console.print(f"[yellow]skipped:[/yellow] {escape(problem)}")
    console.print(f"{result.decisions} decisions recorded ({result.by_decision}).")
    console.print(f"agreement with the automatic filters: {result.agreement}")


@app.command("show")
def golden_show(
    name: NameOption = None,
    per_stratum: Annotated[
        int, typer.Option(help="Items shown per (qtype, language) stratum.")
    ] = 2,
    version: Annotated[
        str | None,
        typer.Option(
            help="A published version such as v1; default: the latest.",
            callback=checked(inputs.golden_version),
        ),
    ] = None,
) -> None:
    """A readable sample per stratum: question, reference answer and gold chunk excerpts."""
    from pipelines.golden.dataset import load_golden_items

    items = load_golden_items(current_settings(), golden_params(name).name, version)
    shown: Counter = Counter()
    for item in sorted(items, key=lambda i: (i.qtype, i.language, i.item_id)):
        stratum = (item.qtype, item.language)
        if shown[stratum] >= per_stratum:
            continue
        shown[stratum] += 1
        table = ReadableTable(
            title=escape(
                f"{item.qtype} · {item.language} · {item.variant} · {item.split} · {item.source}"
            ),
            show_header=False,
        )
        table.add_column("", "name")
        table.add_column("", "text")
        # Questions and passages are data, not Rich markup: a "[link]" in a document stays as
        # written.
        table.add_row("question", escape(item.question))
        table.add_row("reference", escape(item.reference_answer))
        if item.expected_tool:
            table.add_row(
                "expected call",
                escape(
                    f"{item.expected_tool} {json.dumps(item.expected_args, ensure_ascii=False)}"
                ),
            )
        for cid, text in zip(item.gold_chunk_ids, item.reference_contexts):
            table.add_row(escape(cid), escape(text[:300] + ("…" if len(text) > 300 else "")))
        console.print(table)
