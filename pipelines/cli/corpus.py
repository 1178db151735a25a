"""`ragwatch corpus ...`: the corpus index in Qdrant."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.options import current_settings
from pipelines.cli.render.console import console
from pipelines.cli.render.golden import corpus_table

app = typer.Typer(help="The corpus index in Qdrant.", no_args_is_help=True)


@app.command("index")
def corpus_index(
    path: Annotated[Path, typer.Argument(help="Folder of Markdown/HTML/text files.")],
    rebuild: Annotated[
        bool, typer.Option(help="Drop the collection and embed every chunk again (a new embedder).")
    ] = False,
) -> None:
    """Chunk a folder and (re-)index it in Qdrant: dense + BM25 sparse vectors, only changed
    documents."""
    from pipelines.corpus.steps import index_corpus

    settings = current_settings()
    report = index_corpus(settings, path, rebuild=rebuild)
    console.print(corpus_table(report))


@app.command("refresh")
def corpus_refresh(
    path: Annotated[Path, typer.Argument(help="Folder to re-index.")],
    notify: Annotated[
        bool, typer.Option(help="Post a `ragwatch_corpus` asset event to Airflow's REST API.")
    ] = False,
) -> None:
    """Re-index, then (with --notify) tell Airflow so the golden set is rebuilt against the new
    corpus."""
    from pipelines.corpus.steps import index_corpus, notify_refresh

    settings = current_settings()
    report = index_corpus(settings, path)
    console.print(corpus_table(report))
    if notify:
        event = notify_refresh(settings, report)
        console.print(f"asset event posted to {settings.airflow_api_url}: {event}")
