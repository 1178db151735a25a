"""Hand-written golden items: import from CSV or JSONL, match gold passages to chunk ids.

A passage is matched to the chunk that contains it (accent- and space-insensitive) or, failing
that, to the chunk covering at least 90 % of its words (`pipelines.golden.passages`). Unmatched
passages are reported, never guessed; an item with unmatched passages is refused so the file can
be fixed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pipelines.core.files import read_filled_in_rows
from pipelines.core.language import detect_language
from pipelines.core.records import GoldenItem
from pipelines.golden.generate import item_id
from pipelines.golden.passages import PassageMatcher


@dataclass
class ImportReport:
    items: list[GoldenItem] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value).strip()
    if text.startswith("["):
        return [str(v) for v in json.loads(text)]
    return [v.strip() for v in text.split("|") if v.strip()]


def import_human_items(
    path: Path, chunks: Sequence[Any], *, corpus_version: str, created_at: str
) -> ImportReport:
    report = ImportReport()
    by_id = {c.chunk_id: c for c in chunks}
    matcher = PassageMatcher(chunks)
    for number, row in enumerate(
        read_filled_in_rows(path), start=2 if path.suffix.lower() == ".csv" else 1
    ):
        where = f"{path.name} row {number}"
        try:
            item = _item(
                row, where, path, number, matcher, by_id, corpus_version, created_at, report
            )
        except (
            ValueError,
            TypeError,
            AttributeError,
        ) as exc:  # pydantic's ValidationError is a ValueError
            report.problems.append(f"{where}: {_first_error(exc)}")
            continue
        if item is not None:
            report.items.append(item)
    return report


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        return f"{'.'.join(map(str, error['loc']))}: {error['msg']}"
    if isinstance(exc, json.JSONDecodeError):
        return f"a list that is not valid JSON ({exc.msg})"
    return f"unreadable row ({type(exc).__name__})"


def _item(
    row, where, path, number, matcher, by_id, corpus_version, created_at, report
) -> GoldenItem | None:
    """The item of one row, or None with its problems added to `report`; raises on a malformed
    row."""
    question = (row.get("question") or "").strip()
    reference = (row.get("reference_answer") or row.get("reference") or "").strip()
    if not question or not reference:
        report.problems.append(f"{where}: needs both question and reference_answer")
        return None
    gold = _list(row.get("gold_chunk_ids"))
    unknown = [g for g in gold if g not in by_id]
    unmatched = []
    for passage in _list(row.get("gold_passages")):
        matched = matcher.match(passage)
        if matched is None:
            unmatched.append(passage[:60])
        elif matched not in gold:
            gold.append(matched)
    if unknown or unmatched:
        report.problems += [
            f"{where}: gold chunk id {g!r} is not in the current index" for g in unknown
        ]
        report.problems += [f"{where}: no chunk contains the passage {p!r}…" for p in unmatched]
        return None
    qtype = row.get("qtype") or (
        "single_hop" if len(gold) == 1 else "multi_hop" if gold else "adversarial"
    )
    split = "dev" if str(row.get("split", "")).strip().lower() == "dev" else "test"
    # Rows of an online-eval candidates file keep their trace: real phrasing, reviewed by a person.
    trace_id = (row.get("trace_id") or "").strip()
    source, source_ref = ("trace", trace_id) if trace_id else ("human", f"{path.name}:{number}")
    return GoldenItem(
        item_id=item_id(qtype, source_ref if trace_id else f"human:{path.name}", question),
        question=question,
        reference_answer=reference,
        gold_chunk_ids=gold,
        reference_contexts=[by_id[g].text for g in gold],
        qtype=qtype,
        variant=row.get("variant") or ("production" if trace_id else "human"),
        language=row.get("language") or detect_language(question),
        source=source,
        source_ref=source_ref,
        split=split,
        review="accepted",
        generator_model="human",
        corpus_version=corpus_version,
        created_at=created_at,
    )
