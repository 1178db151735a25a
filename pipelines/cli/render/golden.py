"""A golden set's funnel, strata and generation cost; the corpus index report."""

from __future__ import annotations

from pipelines.cli.options import (
    current_settings,
)
from pipelines.cli.render.console import console
from pipelines.cli.render.tables import ReadableTable


def corpus_table(report: dict) -> ReadableTable:
    table = ReadableTable(title="corpus index", show_header=False)
    table.add_column("", "name")
    table.add_column("", "text")
    for key, value in report.items():
        table.add_row(key.replace("_", " "), str(value))
    return table


def print_golden_summary(name: str) -> None:
    from pipelines.golden.steps import paths
    from pipelines.stores.partitions import read_manifest

    manifest = read_manifest(paths(current_settings(), name).released_manifest)
    funnel = ReadableTable(title=f"golden set {name} — filter funnel", show_header=False)
    funnel.add_column("", "name")
    funnel.add_column("")
    steps_in_order = [
        "failed_generation_jobs",
        "generated",
        "after_ambiguity_length",
        "after_closed_book",
        "after_grounding",
        "after_near_duplicates",
        "kept",
    ]
    for step in steps_in_order:
        funnel.add_row(step.replace("_", " "), str(manifest["funnel"].get(step, "-")))
    for reason, n in manifest["funnel"].get("rejected_by_reason", {}).items():
        funnel.add_row(f"  rejected: {reason.replace('_', ' ')}", str(n))
    console.print(funnel)
    strata = ReadableTable(
        title=f"golden/{name}/{manifest['version']} — {manifest['items']} items, corpus {manifest['corpus_version']}"
    )
    for column in ("split", "qtype", "language"):
        strata.add_column(column, "name")
    strata.add_column("items")
    for row in manifest["strata"]:
        strata.add_row(row["split"], row["qtype"], row["language"], str(row["n"]))
    console.print(strata)
    if manifest.get("cost"):
        console.print(golden_cost_table(manifest["cost"]))
        if budget := manifest["cost"].get("budget"):
            console.print(
                f"token budget {budget['cap']:,}: {budget['generation_jobs_skipped']:,} generation jobs "
                f"not run and {budget['candidates_rejected']:,} candidates not checked (rejected) for the "
                "budget"
            )
    console.print(
        f"generator: {', '.join(manifest['generator_models'])} · judge: {manifest['judge_model']} · "
        f"stale replaced: {len(manifest['stale'])} · human-rejected: {len(manifest['human_rejected_ids'])}"
    )


def golden_cost_table(cost: dict) -> ReadableTable:
    table = ReadableTable(
        title=f"generation cost — {cost['generated']} generated, {cost['kept']} kept "
        "(requests sent: retries and repairs in, cache hits out)"
    )
    for column in ("", "requests", "prompt tokens", "completion tokens"):
        table.add_column(column, "number" if column else "name")
    keys = ("requests", "prompt_tokens", "completion_tokens")
    for label, row in (
        ("generator", cost["generator"]),
        ("judge (filters)", cost["judge"]),
        ("total", cost["total"]),
        ("per generated item", cost["per_generated_item"]),
        ("per kept item", cost["per_kept_item"]),
    ):
        table.add_row(label, *("-" if row.get(k) is None else f"{row[k]:,}" for k in keys))
    return table
