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
    source = getattr(counts, "source_counts", {})
    if (
        source.get("spans_lost")
        or source.get("lines_truncated_file")
        or source.get("lines_unreadable_line")
    ):
        named = sum(
            v
            for k, v in source.items()
            if k in ("rejected_truncated_file", "rejected_unreadable_line")
        )
        table.add_row(
            "damaged span files",
            f"{source.get('spans_lost', 0):,} spans lost; {named:,} traces named in damaged lines and "
            f"{source.get('rejected_incomplete_trace', 0):,} incomplete, quarantined (of the day, selected or not)",
        )
    table.add_row(
        "PII replaced", ", ".join(f"{k}: {v}" for k, v in counts.pii_counts.items()) or "none"
    )
    table.add_row("validation", validation)
    table.add_row("partition", str(partition))
    if dvc_md5:
        table.add_row("DVC version", f"md5 {dvc_md5} (workspace commit {workspace_rev})")
    console.print(table)
