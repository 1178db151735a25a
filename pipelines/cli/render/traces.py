"""A published trace sample's counts as a table."""

from __future__ import annotations

from pathlib import Path

from pipelines.cli.render.console import console
from pipelines.cli.render.tables import ReadableTable


def print_sample_summary(
    counts, validation: str, partition: Path, dvc_md5: str | None, workspace_rev: str | None
) -> None:
    table = ReadableTable(title=f"trace_sampling — {counts.day}", show_header=False)
    table.add_column("", "name")
    table.add_column("", "text")
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
