"""`ragwatch anonymize`: a JSONL file of traces anonymized for data teams, same fields out."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape

from pipelines.cli.options import (
    current_settings,
)
from pipelines.cli.render.console import console, progress_bar


def anonymize(
    source: Annotated[
        Path, typer.Option("--in", exists=True, dir_okay=False, help="JSONL, one Trace per line.")
    ],
    target: Annotated[
        Path, typer.Option("--out", help="JSONL written with the same fields, anonymized.")
    ],
    quarantine: Annotated[
        Path | None, typer.Option(help="Where unreadable lines go (anonymized, with a reason).")
    ] = None,
) -> None:
    """Anonymize a JSONL file of traces for data teams (same fields out)."""
    from pipelines.core.records import Trace
    from pipelines.privacy.anonymizer import Anonymizer

    anonymizer = Anonymizer(current_settings().pseudonym_key)
    quarantine = quarantine or target.with_suffix(".quarantine.jsonl")
    totals, written, rejected = Counter(), 0, 0
    tmp_out, tmp_bad = target.with_suffix(".partial"), quarantine.with_suffix(".partial")

    def reject(number: int, reason: str, raw: str) -> None:
        nonlocal rejected
        text = anonymizer.anonymize_text(raw, f"line-{number}", Counter())
        bad.write(
            json.dumps({"line": number, "reason": reason, "raw": text}, ensure_ascii=False) + "\n"
        )
        console.print(f"[yellow]quarantined[/yellow] {escape(reason)}")
        rejected += 1

    try:
        # Bytes in, so that one line in another encoding is that line's problem, not the file's.
        with (
            progress_bar() as bar,
            source.open("rb") as lines,
            tmp_out.open("w", encoding="utf-8") as out,
            tmp_bad.open("w", encoding="utf-8") as bad,
        ):
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
                    reject(
                        number,
                        f"line {number}: {'.'.join(map(str, error['loc'])) or 'line'}: {error['msg']}",
                        line.rstrip("\r\n"),
                    )
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
    console.print(
        f"{written:,} traces written to {target}; {rejected:,} lines quarantined"
        + (f" in {quarantine}" if rejected else "")
    )
    console.print(
        "PII replaced: " + (", ".join(f"{k}: {v}" for k, v in sorted(totals.items())) or "none")
    )
